"""The emails the installation sends to people (not contacts): an invitation to a workspace
for a new person and a password reset, each carrying a one-time sign-in link, and the notice
that an existing person was given a role, which carries no link (only the sign-in page's
address). Every value is plain text here; `transactional.queue_system` hands the finished
message to the engine as literal source, so a name holding `{{ ... }}` is printed, not run."""

from __future__ import annotations

from html import escape


def _email(subject: str, lines: list[str], button: str, link: str, footer: str) -> dict[str, str]:
    paragraphs = "".join(f'<p style="margin:0 0 16px">{escape(line)}</p>' for line in lines)
    html = (
        '<!doctype html><html lang="en"><body style="margin:0;padding:24px;'
        "background:#f6f8fa;font:16px/1.5 system-ui,-apple-system,'Segoe UI',sans-serif;"
        'color:#1f2328"><div style="max-width:520px;margin:0 auto;background:#fff;'
        'border-radius:10px;padding:24px">'
        f'<h1 style="font-size:20px;margin:0 0 16px">{escape(subject)}</h1>{paragraphs}'
        f'<p style="margin:24px 0"><a href="{escape(link)}" style="background:#1d4ed8;'
        'color:#fff;padding:12px 20px;border-radius:8px;text-decoration:none;font-weight:600">'
        f'{escape(button)}</a></p><p style="color:#57606a;font-size:14px">{escape(footer)}'
        f"<br>{escape(link)}</p></div></body></html>"
    )
    text = "\n\n".join([subject, *lines, f"{button}: {link}", footer]) + "\n"
    return {"subject": subject, "html_content": html, "text_content": text}


def _role(role: str) -> str:
    return "an admin" if role == "admin" else "a member"


def invitation(inviter: str, workspace: str, role: str, link: str) -> dict[str, str]:
    return _email(
        f"You are invited to {workspace} on Mailroom",
        [
            f"{inviter} invited you to work on {workspace} as {_role(role)}.",
            "Choose a password to accept.",
        ],
        "Accept and choose a password",
        link,
        "The link works once, for 3 days. If you did not expect this, ignore this email.",
    )


def access_granted(
    inviter: str, workspace: str, role: str, sign_in: str, forgot: str
) -> dict[str, str]:
    """To a person who exists already: nothing in it signs anyone in."""
    return _email(
        f"You now have access to {workspace} on Mailroom",
        [
            f"{inviter} gave you access to {workspace} as {_role(role)}.",
            "Sign in with your Mailroom email and password; the workspace is in the list at "
            "the top of the page. If you have no password yet, or forgot it, choose one at "
            f"{forgot}",
        ],
        "Sign in",
        sign_in,
        "If you did not expect this, you can ignore this email.",
    )


def password_reset(link: str) -> dict[str, str]:
    return _email(
        "Choose a new Mailroom password",
        ["Someone (we hope you) asked to reset the password of this Mailroom account."],
        "Choose a new password",
        link,
        "The link works once, for 3 days. If you did not ask, ignore this email: your "
        "password stays as it is.",
    )
