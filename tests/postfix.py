"""A private Postfix instance for end-to-end tests: Debian's `postfix` package (installed by
`tests.debian` when missing), its own configuration, queue and log in a
temporary directory, listening on a free port of 127.0.0.1, never touching `/etc/postfix` or
port 25.

It relays what Mailroom hands it (127.0.0.1 is `mynetworks`) by `transport_maps`: each domain
to a port of 127.0.0.1 (the SMTP sink for recipients, the bounce listener for the return-path
domain). DNS is off, so nothing leaves the machine. `Postfix.unavailable()` says why it cannot
run, or None.
"""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import tempfile
from pathlib import Path

from tests.debian import ensure

POSTFIX = "/usr/sbin/postfix"
STOCK_MASTER = Path("/etc/postfix/master.cf")


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


class Postfix:
    def __init__(self, routes: dict[str, int | str]) -> None:
        """`routes`: domain -> port on 127.0.0.1 it is relayed to, or a transport of Postfix's
        own (`discard:` for a sink that keeps nothing); `*` is any other domain."""
        self.routes = routes
        self.port = _free_port()
        self.home = Path(tempfile.mkdtemp(prefix="mailroom-postfix-"))
        self.conf = self.home / "conf"

    @staticmethod
    def unavailable() -> str | None:
        reason = ensure("postfix", POSTFIX)
        if reason:
            return reason
        if os.geteuid() != 0:
            return "a private postfix instance needs root (its daemons drop to user postfix)"
        if not STOCK_MASTER.exists():
            return f"{STOCK_MASTER} is missing (postfix is installed incompletely)"
        return None

    @property
    def url(self) -> str:
        return f"smtp://127.0.0.1:{self.port}"

    @property
    def log(self) -> str:
        path = self.home / "maillog"
        return path.read_text(errors="replace") if path.exists() else ""

    def _main_cf(self) -> str:
        home = self.home
        return "\n".join(
            [
                "compatibility_level = 3.6",
                f"queue_directory = {home}/queue",
                f"data_directory = {home}/data",
                "meta_directory = /etc/postfix",
                "mail_owner = postfix",
                "setgid_group = postdrop",
                "myhostname = relay.mailroom.test",
                "mydomain = mailroom.test",
                "mydestination =",
                "relay_domains =",
                "inet_interfaces = 127.0.0.1",
                "inet_protocols = ipv4",
                "mynetworks = 127.0.0.0/8",
                "smtpd_relay_restrictions = permit_mynetworks, reject",
                f"transport_maps = texthash:{self.conf}/transport",
                "local_transport = error:local delivery is disabled",
                "alias_maps =",
                "alias_database =",
                "smtp_dns_support_level = disabled",
                "smtp_host_lookup = native",
                "smtp_tls_security_level = none",
                "smtpd_tls_security_level = none",
                "queue_run_delay = 1s",
                "minimal_backoff_time = 1s",
                "maximal_backoff_time = 2s",
                f"maillog_file = {home}/maillog",
                f"maillog_file_prefixes = {home}",
                "biff = no",
                "",
            ]
        )

    def _master_cf(self) -> str:
        """Debian's services with chroot off (the queue is not under a chroot here) and the
        SMTP server on our port instead of 25."""
        lines = []
        for line in STOCK_MASTER.read_text().splitlines():
            fields = line.split()
            if not line or line[0] in "# \t" or len(fields) < 8:
                if line.startswith((" ", "\t")) and lines and lines[-1].startswith("#"):
                    continue  # the options of a service we commented out
                lines.append(line)
                continue
            if fields[1] == "inet":
                lines.append("# " + line)  # the stock smtp on port 25, submission, ...
                continue
            fields[4] = "n"
            lines.append("  ".join(fields))
        lines.append(f"127.0.0.1:{self.port} inet n - n - - smtpd")
        return "\n".join(lines) + "\n"

    def start(self) -> None:
        self.conf.mkdir(parents=True)
        os.chmod(self.home, 0o755)
        (self.home / "queue").mkdir(mode=0o755)
        (self.home / "data").mkdir(mode=0o700)
        shutil.chown(self.home / "data", "postfix", "postfix")
        (self.conf / "main.cf").write_text(self._main_cf())
        (self.conf / "master.cf").write_text(self._master_cf())
        (self.conf / "transport").write_text(
            "".join(
                f"{domain} {route}\n"
                if isinstance(route, str)
                else f"{domain} smtp:[127.0.0.1]:{route}\n"
                for domain, route in self.routes.items()
            )
        )
        self._postfix("check")
        self._postfix("start")

    def stop(self) -> None:
        self._postfix("stop", check=False)
        shutil.rmtree(self.home, ignore_errors=True)

    def _postfix(self, command: str, *, check: bool = True) -> None:
        done = subprocess.run(
            [POSTFIX, "-c", str(self.conf), command], capture_output=True, text=True, timeout=60
        )
        if check and done.returncode != 0:
            raise RuntimeError(f"postfix {command} failed: {done.stderr.strip()}\n{self.log}")
