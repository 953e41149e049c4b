"""mailroom.platform_imports.formats.read_export on exports shaped as each platform writes them
(tests/platform_imports/fixtures; the shapes and where they come from are in each
formats_<platform> module's docstring): the Mailchimp audience archive and its files alone,
listmonk's subscribers CSV, Brevo's contacts export (`;`), Kit's subscribers export and Mautic's
contacts export (alone and zipped); then the refusals (platform, size, not an export, not UTF-8)."""

from __future__ import annotations

import base64
import io
import os
import zipfile
from collections import Counter
from datetime import UTC, datetime
from pathlib import Path

import pytest

from mailroom.contacts.importer import TOO_LARGE
from mailroom.platform_imports import formats
from mailroom.platform_imports.formats import NOT_AN_EXPORT, read_export
from mailroom.platform_imports.records import (
    ExportUnreadable,
    FieldSpec,
    PlatformContact,
    PlatformExport,
)

FIXTURES = Path(__file__).parent / "fixtures"
MAILCHIMP = FIXTURES / "mailchimp"
SUBSCRIBED = "subscribed_members_export_5f3e2a1b9c.csv"
UNSUBSCRIBED = "unsubscribed_members_export_5f3e2a1b9c.csv"
CLEANED = "cleaned_members_export_5f3e2a1b9c.csv"
NONSUBSCRIBED = "nonsubscribed_members_export_5f3e2a1b9c.csv"


def fixture(name: str) -> bytes:
    return (FIXTURES / name).read_bytes()


def zipped(entries: dict[str, bytes]) -> bytes:
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", zipfile.ZIP_DEFLATED) as archive:
        for name, data in entries.items():
            archive.writestr(name, data)
    return buffer.getvalue()


def mailchimp_files() -> dict[str, bytes]:
    return {p.name: p.read_bytes() for p in sorted(MAILCHIMP.iterdir())}


def by_email(export: PlatformExport) -> dict[str, PlatformContact]:
    return {c.email: c for c in export.contacts}


def states(export: PlatformExport) -> Counter[tuple[str, str | None]]:
    return Counter((c.status, c.suppress) for c in export.contacts)


def refusal(platform: str, filename: str, content: bytes) -> ExportUnreadable:
    with pytest.raises(ExportUnreadable) as caught:
        read_export(platform, filename, content)
    return caught.value


def at(text: str) -> datetime:
    return datetime.fromisoformat(text).replace(tzinfo=UTC)


# --- Mailchimp --------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def audience() -> PlatformExport:
    return read_export("mailchimp", "members_export_5f3e2a1b9c.zip", zipped(mailchimp_files()))


def test_mailchimp_archive_statuses_suppressions_and_skips(audience):
    assert audience.platform == "mailchimp"
    assert len(audience.contacts) == 9
    assert states(audience) == {
        ("subscribed", None): 4,
        ("unsubscribed", "unsubscribed"): 3,
        ("bounced", "bounced"): 2,
    }
    assert audience.skipped == [
        {"row": 4, "source": SUBSCRIBED, "reason": "no email address"},
        {
            "row": 1,
            "source": NONSUBSCRIBED,
            "email": "shopper@store-buyer.shop",
            "reason": "never subscribed (Mailchimp non-subscribed contact)",
        },
    ]
    # The audience is not named in the export: no lists (the importer uses the caller's list).
    assert audience.lists == []
    assert all(c.lists == [] for c in audience.contacts)


def test_mailchimp_fields_are_merge_fields_with_inferred_types(audience):
    assert audience.fields == [
        FieldSpec("company", "Company", "text"),
        FieldSpec("phone", "Phone Number", "text"),
        FieldSpec("birthday", "Birthday", "text"),  # MM/DD is no date
        FieldSpec("signup_date", "Signup Date", "date"),
        FieldSpec("loyalty_points", "Loyalty Points", "number"),
        FieldSpec("vip_member", "VIP Member", "boolean"),
    ]
    own = {"member_rating", "optin_time", "confirm_ip", "leid", "euid", "notes", "tags", "cc"}
    assert not own & {key for c in audience.contacts for key in c.fields}


def test_mailchimp_subscriber_record(audience):
    assert by_email(audience)["ada@analytical-engine.co"] == PlatformContact(
        row=1,
        source=SUBSCRIBED,
        email="ada@analytical-engine.co",
        first_name="Ada",
        last_name="Lovelace",
        status="subscribed",
        suppress=None,
        fields={
            "company": "Analytical Engines Ltd",
            "phone": "+44 20 7946 0018",
            "birthday": "12/10",
            "signup_date": "2023-01-15",
            "loyalty_points": "120",
            "vip_member": "Yes",
        },
        tags=["Customer", "VIP"],
        lists=[],
        consent_at=at("2023-01-15 09:14:02"),  # CONFIRM_TIME, not OPTIN_TIME
        consent_ip="81.2.69.160",  # CONFIRM_IP
    )


def test_mailchimp_consent_falls_back_to_optin(audience):
    contacts = by_email(audience)
    grace = contacts["grace@hopper.dev"]  # single opt-in: no CONFIRM_* at all
    assert (grace.consent_at, grace.consent_ip) == (at("2023-02-20 14:00:00"), "198.51.100.7")
    linus = contacts["linus@kernel.fi"]  # confirmed, no OPTIN_*
    assert (linus.consent_at, linus.consent_ip) == (at("2023-03-01 12:00:00"), "203.0.113.9")
    assert linus.last_name is None
    # An unreadable CONFIRM_TIME: the OPTIN_TIME, one warning for the whole export.
    margaret = contacts["margaret@apollo.space"]
    assert (margaret.consent_at, margaret.consent_ip) == (at("2023-04-05 16:30:00"), "192.0.2.44")
    assert margaret.consent_at is not None and margaret.consent_at.tzinfo is UTC
    assert [w for w in audience.warnings if "could not be read" in w] == [
        "1 date(s) could not be read and were left empty (first: "
        f"{SUBSCRIBED} row 5, CONFIRM_TIME 'sometime in April')"
    ]
    # TAGS is a cell of quoted names; a comma inside one stays in the name.
    assert margaret.tags == ["VIP", "Speaker, 2023"]


def test_mailchimp_unsubscribed_and_cleaned_win_over_subscribed(audience):
    contacts = by_email(audience)
    alan = contacts["alan@bletchley.uk"]  # subscribed file row 6, unsubscribed file row 1
    assert (alan.status, alan.suppress, alan.source, alan.row) == (
        "unsubscribed",
        "unsubscribed",
        UNSUBSCRIBED,
        1,
    )
    # The unsubscribed row leaves the merge fields empty: the subscribed row fills them.
    assert alan.fields == {
        "company": "GC&CS",
        "birthday": "06/23",
        "signup_date": "2023-05-10",
        "loyalty_points": "7",
        "vip_member": "No",
    }
    assert alan.tags == ["Former customer", "Newsletter"]
    # Compared case-insensitively; the cleaned file's spelling and row win.
    assert "Katherine@Langley.aero" not in contacts
    katherine = contacts["katherine@langley.aero"]
    assert (katherine.status, katherine.suppress, katherine.source) == (
        "bounced",
        "bounced",
        CLEANED,
    )
    assert (katherine.first_name, katherine.last_name) == ("Katherine", "Johnson")
    assert katherine.fields["loyalty_points"] == "300"
    assert "2 repeated address(es) merged into one contact each (the strongest status wins)" in (
        audience.warnings
    )
    for email in ("edsger@dijkstra.nl", "barbara@clu-lang.org"):
        assert (contacts[email].status, contacts[email].suppress) == (
            "unsubscribed",
            "unsubscribed",
        )
    charles = contacts["old.address@defunct-mailhost.net"]
    assert (charles.status, charles.suppress, charles.tags) == ("bounced", "bounced", ["Customer"])


def test_a_suppression_is_never_downgraded_whatever_the_file_order():
    files = mailchimp_files()
    # A file named otherwise (read last, subscribed by its columns) saying Katherine is subscribed.
    files["zz_resubscribed.csv"] = files[SUBSCRIBED]
    export = read_export("mailchimp", "audience.zip", zipped(files))
    katherine = by_email(export)["katherine@langley.aero"]
    assert (katherine.status, katherine.suppress) == ("bounced", "bounced")
    assert states(export)[("subscribed", None)] == 4


@pytest.mark.parametrize(
    ("name", "fixture_name", "state"),
    [
        (SUBSCRIBED, SUBSCRIBED, ("subscribed", None)),
        (UNSUBSCRIBED, UNSUBSCRIBED, ("unsubscribed", "unsubscribed")),
        (CLEANED, CLEANED, ("bounced", "bounced")),
        # Newer exports' names, any case; the name decides, not the columns.
        (
            "Unsubscribed_Email_Audience_Export_5f3e.csv",
            SUBSCRIBED,
            ("unsubscribed", "unsubscribed"),
        ),
        ("cleaned_email_audience_export_5f3e.csv", SUBSCRIBED, ("bounced", "bounced")),
    ],
)
def test_mailchimp_one_file_alone_takes_its_kind_from_its_name(name, fixture_name, state):
    export = read_export("mailchimp", name, (MAILCHIMP / fixture_name).read_bytes())
    assert {(c.status, c.suppress) for c in export.contacts} == {state}
    assert export.contacts[0].source == name


@pytest.mark.parametrize(
    ("fixture_name", "state"),
    [
        (SUBSCRIBED, ("subscribed", None)),
        (UNSUBSCRIBED, ("unsubscribed", "unsubscribed")),  # has UNSUB_TIME
        (CLEANED, ("bounced", "bounced")),  # has CLEAN_TIME
    ],
)
def test_mailchimp_file_named_otherwise_takes_its_kind_from_its_columns(fixture_name, state):
    export = read_export("mailchimp", "my audience.csv", (MAILCHIMP / fixture_name).read_bytes())
    assert {(c.status, c.suppress) for c in export.contacts} == {state}
    assert export.contacts[0].source == "my audience.csv"


def test_mailchimp_field_keys_from_names():
    content = (
        b'"Email Address","First Name","Last Name","Favourite Colour (UK)","Zip Code",Score,'
        b"MEMBER_RATING,OPTIN_TIME,TAGS\n"
        b'a@b.co,A,B,Blue,02134,+3,2,"2024-01-02 03:04:05",\n'
        b'c@d.co,C,D,,90210,7,2,bad-time,"vip, denver"\n'
        b'e@f.co,E,F,,,x,2,also-bad,"""Quoted"""\n'
    )
    export = read_export("mailchimp", "subscribed_members_export_1.csv", content)
    assert export.fields == [
        FieldSpec("favourite_colour__uk_", "Favourite Colour (UK)", "text"),
        # A leading zero or a sign is not a number: zip codes and phones stay text.
        FieldSpec("zip_code", "Zip Code", "text"),
        FieldSpec("score", "Score", "text"),
    ]
    contacts = by_email(export)
    assert contacts["a@b.co"].fields == {
        "favourite_colour__uk_": "Blue",
        "zip_code": "02134",
        "score": "+3",
    }
    assert contacts["a@b.co"].consent_at == at("2024-01-02 03:04:05")
    assert contacts["a@b.co"].consent_ip is None
    assert contacts["c@d.co"].tags == ["vip", "denver"]
    assert contacts["e@f.co"].tags == ["Quoted"]
    assert contacts["c@d.co"].consent_at is None
    assert export.warnings == [
        "2 date(s) could not be read and were left empty (first: "
        "subscribed_members_export_1.csv row 2, OPTIN_TIME 'bad-time')"
    ]


def test_mailchimp_archive_with_other_files():
    files = {
        "__MACOSX/._" + SUBSCRIBED: b"\x00\x05\x16\x07junk",
        "README.txt": b"not a csv",
        "stats.csv": b"campaign,opens\nMarch,12\n",
        SUBSCRIBED: (MAILCHIMP / SUBSCRIBED).read_bytes(),
    }
    export = read_export("mailchimp", "export.zip", zipped(files))
    assert len(export.contacts) == 6
    assert "stats.csv: no email column, so not part of the export; skipped" in export.warnings


def test_mailchimp_archive_without_an_export():
    only_stats = zipped({"stats.csv": b"campaign,opens\nMarch,12\n"})
    assert refusal("mailchimp", "export.zip", only_stats).args == (NOT_AN_EXPORT["mailchimp"],)
    error = refusal("mailchimp", "export.zip", zipped({"README.txt": b"hello"}))
    assert (error.status, error.message) == (
        422,
        "Not a Mailchimp audience export: the archive holds no CSV file",
    )


# --- listmonk ---------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def listmonk() -> PlatformExport:
    return read_export("listmonk", "subscribers.csv", fixture("listmonk_subscribers.csv"))


def test_listmonk_statuses_names_and_skips(listmonk):
    assert states(listmonk) == {
        ("subscribed", None): 4,
        ("unsubscribed", "unsubscribed"): 1,  # blocklisted
        ("archived", None): 1,  # disabled
    }
    contacts = by_email(listmonk)
    names = {email: (c.first_name, c.last_name) for email, c in contacts.items()}
    assert names == {
        "kailash@zerodha.example.in": ("Kailash", "Nadh"),
        "priya@pune-devs.in": ("Priya", None),
        "reported.spam@mailinator-like.net": ("Spam", "Reporter Person"),
        "old.member@chennai-club.in": ("Ravi", "Kumar"),
        "quiet.reader@fastmail-like.com": (None, None),
        "maria.jose@garcia-lab.es": ("María", "José García"),
    }
    assert contacts["reported.spam@mailinator-like.net"].status == "unsubscribed"
    assert contacts["old.member@chennai-club.in"].status == "archived"
    assert listmonk.skipped == [
        {"row": 5, "source": "subscribers.csv", "reason": "no email address"}
    ]
    assert listmonk.lists == []
    assert all(c.consent_at is None and c.tags == [] for c in listmonk.contacts)


def test_listmonk_attributes_are_fields_typed_by_their_json(listmonk):
    assert listmonk.fields == [
        FieldSpec("beta", "beta", "boolean"),
        FieldSpec("city", "city", "text"),
        FieldSpec("joined", "joined", "date"),
        FieldSpec("projects", "projects", "number"),
    ]
    contacts = by_email(listmonk)
    assert contacts["kailash@zerodha.example.in"] == PlatformContact(
        row=1,
        source="subscribers.csv",
        email="kailash@zerodha.example.in",
        first_name="Kailash",
        last_name="Nadh",
        status="subscribed",
        suppress=None,
        fields={"beta": "true", "city": "Bengaluru", "joined": "2021-06-01", "projects": "3"},
        tags=[],
        lists=[],
        consent_at=None,
        consent_ip=None,
    )
    assert contacts["maria.jose@garcia-lab.es"].fields == {"projects": "7.5"}
    assert contacts["old.member@chennai-club.in"].fields == {"city": "Chennai"}
    assert listmonk.warnings == [
        'listmonk attribute "prefs" holds an object or a list: not imported',
        'listmonk attribute "interests" holds an object or a list: not imported',
        'Field "notes-2" was not imported: its key "notes-2" is not letters, digits and _',
    ]


def test_listmonk_keys_as_is_and_odd_rows():
    content = (
        b"uuid,email,name,attributes,status,created_at,updated_at\n"
        b'u1,a@b.co,A,"{""Plan"": ""Pro"", ""n"": null}",enabled,,\n'
        b"u2,c@d.co,C,not json,enabled,,\n"
        b"u3,e@f.co,E,{},pending,,\n"
    )
    export = read_export("listmonk", "s.csv", content)
    assert [c.email for c in export.contacts] == ["a@b.co", "c@d.co"]
    assert export.contacts[0].fields == {"Plan": "Pro"}  # not lowercased; null is no value
    assert export.fields == [FieldSpec("Plan", "Plan", "text")]
    assert export.skipped == [
        {
            "row": 3,
            "source": "s.csv",
            "email": "e@f.co",
            "reason": 'unknown listmonk status "pending"',
        }
    ]
    assert export.warnings == ["s.csv row 2: attributes is not a JSON object: not imported"]


# --- Brevo ------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def brevo() -> PlatformExport:
    return read_export("brevo", "contacts_export.csv", fixture("brevo_contacts_export.csv"))


def test_brevo_export(brevo):
    assert states(brevo) == {("subscribed", None): 3, ("unsubscribed", "unsubscribed"): 2}
    assert brevo.fields == [
        FieldSpec("city", "CITY", "text"),
        FieldSpec("plan", "PLAN", "text"),
        FieldSpec("seats", "SEATS", "number"),
        FieldSpec("newsletter_optin", "NEWSLETTER_OPTIN", "boolean"),
        FieldSpec("birthday", "BIRTHDAY", "date"),
    ]
    assert brevo.lists == ["Brevo list 2", "Brevo list 7"]
    assert brevo.skipped == [
        {"row": 4, "source": "contacts_export.csv", "reason": "no email address"}
    ]
    contacts = by_email(brevo)
    assert contacts["camille@atelier-lumiere.fr"] == PlatformContact(
        row=1,
        source="contacts_export.csv",
        email="camille@atelier-lumiere.fr",
        first_name="Camille",
        last_name="Durand",
        status="subscribed",
        suppress=None,
        fields={
            "city": "Lyon",
            "plan": "Pro",
            "seats": "12",
            "newsletter_optin": "true",
            "birthday": "1990-04-12",
        },
        tags=[],
        lists=[("Brevo list 2", "confirmed"), ("Brevo list 7", "confirmed")],
        consent_at=None,
        consent_ip=None,
    )
    assert (
        contacts["zoe@angstrom-optics.se"].first_name,
        contacts["zoe@angstrom-optics.se"].last_name,
    ) == ("Zoë", "Ångström")
    assert contacts["zoe@angstrom-optics.se"].lists == []
    for blacklisted in ("left.us@example-agency.de", "marco@trattoria-roma.it"):  # Yes / yes
        assert (contacts[blacklisted].status, contacts[blacklisted].suppress) == (
            "unsubscribed",
            "unsubscribed",
        )
    # Brevo's own columns are not fields.
    keys = {key for c in brevo.contacts for key in c.fields}
    assert not keys & {"sms", "contact_id", "added_time", "double_opt_in", "email_blacklisted"}


def test_brevo_named_columns_and_bounce_markers():
    content = (
        b"Email,First name,Last name,Email blacklisted,Hard bounce,Lists,Company\n"
        b'a@b.co,A,B,No,No,"Newsletter, Customers",Acme\n'
        b"c@d.co,C,D,Yes,Yes,Newsletter,\n"
        b"e@f.co,E,F,no,true,,\n"
    )
    export = read_export("brevo", "export.csv", content)
    contacts = by_email(export)
    assert [(c.status, c.suppress) for c in export.contacts] == [
        ("subscribed", None),
        ("bounced", "bounced"),  # a hard bounce is stronger than the blacklist
        ("bounced", "bounced"),
    ]
    assert contacts["a@b.co"].lists == [("Newsletter", "confirmed"), ("Customers", "confirmed")]
    assert export.lists == ["Newsletter", "Customers"]
    assert export.fields == [FieldSpec("company", "Company", "text")]


# --- Kit --------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def kit() -> PlatformExport:
    return read_export("kit", "subscribers.csv", fixture("kit_subscribers_export.csv"))


def test_kit_export(kit):
    assert states(kit) == {
        ("subscribed", None): 3,  # active, cold, active
        ("unsubscribed", "unsubscribed"): 1,  # cancelled
        ("bounced", "bounced"): 1,
        ("complained", "complained"): 1,
    }
    assert kit.skipped == [
        {
            "row": 6,
            "source": "subscribers.csv",
            "email": "dee@never-confirmed.net",
            "reason": "never confirmed the opt-in (unconfirmed in Kit)",
        },
        {"row": 7, "source": "subscribers.csv", "reason": "no email address"},
    ]
    assert kit.fields == [
        FieldSpec("company", "company", "text"),
        FieldSpec("score", "score", "number"),
        FieldSpec("trial_ends", "trial_ends", "date"),
        FieldSpec("paid_customer", "paid_customer", "boolean"),
    ]
    contacts = by_email(kit)
    assert contacts["finn@makers-guild.ie"] == PlatformContact(
        row=8,
        source="subscribers.csv",
        email="finn@makers-guild.ie",
        first_name="Finn",
        last_name="O'Brien",
        status="subscribed",
        suppress=None,
        fields={
            "company": "Makers Guild",
            "score": "47.5",
            "trial_ends": "2024-09-30",
            "paid_customer": "true",
        },
        tags=["Creator", "Maker"],  # "creator" repeated in another case: once
        lists=[],
        consent_at=None,
        consent_ip=None,
    )
    assert contacts["nathan@creator-hq.co"].tags == ["Creator", "Newsletter"]
    assert (contacts["val@podcast-studio.fm"].status, contacts["val@podcast-studio.fm"].tags) == (
        "subscribed",
        ["Podcast"],
    )
    assert contacts["cal@angry-reader.org"].suppress == "complained"
    assert kit.lists == [] and kit.warnings == []


# --- Mautic -----------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def mautic() -> PlatformExport:
    return read_export("mautic", "contacts.csv", fixture("mautic_contacts_export.csv"))


def test_mautic_export(mautic):
    assert states(mautic) == {("subscribed", None): 4}
    assert mautic.skipped == [{"row": 4, "source": "contacts.csv", "reason": "no email address"}]
    assert [f.key for f in mautic.fields] == [
        "title",
        "company",
        "position",
        "mobile",
        "phone",
        "address1",
        "city",
        "state",
        "zipcode",
        "country",
        "timezone",
        "website",
        "twitter",
        "vip",
        "contract_value",
        "renewal_date",
    ]
    types = {f.key: f.type for f in mautic.fields}
    assert (types["vip"], types["contract_value"], types["renewal_date"]) == (
        "boolean",
        "number",
        "date",
    )
    assert types["zipcode"] == "text"  # 01000 and 100-0001 are not numbers
    assert all(f.label == f.key for f in mautic.fields)
    jean = by_email(mautic)["jean.dupont@acme-sarl.fr"]
    assert (jean.first_name, jean.last_name, jean.language) == ("Jean", "Dupont", "fr")
    assert jean.fields["contract_value"] == "12000.50"
    assert {c.email: c.language for c in mautic.contacts}["aiko@tanaka-labs.jp"] == "ja"
    keys = {key for c in mautic.contacts for key in c.fields}
    assert not keys & {"id", "points", "last_active", "attribution", "stage", "preferred_locale"}
    assert mautic.warnings == [
        "This Mautic export has no do-not-contact column: contacts who unsubscribed or bounced "
        "in Mautic are imported as subscribed unless you suppress them"
    ]


def test_mautic_zipped_export_with_tags_and_do_not_contact():
    content = (
        b"id,firstname,lastname,email,points,tags,dnc,stage\n"
        b"1,Ana,Silva,ana@silva.pt,10,Lead|VIP,,Customer\n"
        b"2,Bob,Stone,bob@stone.us,0,Newsletter,unsubscribed,\n"
        b"3,Cy,Young,cy@young.ca,0,,bounced,\n"
        b"4,Di,Ross,di@ross.uk,0,,manual,\n"
        b"5,Ed,Lee,ed@lee.kr,0,,0,\n"
    )
    archive = zipped({"contacts_export_2024_03_01_10_00_00.csv": content})
    export = read_export("mautic", "contacts_export_2024_03_01_10_00_00.zip", archive)
    assert [(c.email, c.status, c.suppress) for c in export.contacts] == [
        ("ana@silva.pt", "subscribed", None),
        ("bob@stone.us", "unsubscribed", "unsubscribed"),
        ("cy@young.ca", "bounced", "bounced"),
        ("di@ross.uk", "unsubscribed", "unsubscribed"),
        ("ed@lee.kr", "subscribed", None),
    ]
    assert export.contacts[0].tags == ["Lead", "VIP"]
    assert export.contacts[0].source == "contacts_export_2024_03_01_10_00_00.csv"
    assert export.fields == [] and export.warnings == []


# --- refusals ---------------------------------------------------------------------------------


def test_unknown_platform():
    error = refusal("hubspot", "x.csv", b"email\na@b.co\n")
    assert (error.status, error.message) == (
        400,
        "platform must be one of mailchimp, listmonk, brevo, kit, mautic",
    )


@pytest.mark.parametrize(
    ("platform", "message"),
    [
        ("mailchimp", 'Not a Mailchimp audience export: expected an "Email Address" column'),
        ("listmonk", 'Not a listmonk subscribers export: expected an "email" column'),
        ("brevo", 'Not a Brevo contacts export: expected an "EMAIL" column'),
        ("kit", 'Not a Kit subscribers export: expected an "email_address" column'),
        ("mautic", 'Not a Mautic contacts export: expected an "email" column'),
    ],
)
def test_not_the_platforms_export(platform, message):
    error = refusal(platform, "orders.csv", b"order_id,total\n1,9.99\n")
    assert (error.status, error.message) == (422, message)
    assert refusal(platform, "empty.csv", b"").status == 422
    # Another platform's export (Kit's `email_address` is not Mautic's `email`).
    if platform == "mautic":
        other = refusal(platform, "kit.csv", fixture("kit_subscribers_export.csv"))
        assert other.message == message


def test_a_csv_over_5_mb():
    content = b"email,notes\na@b.co," + b"x" * (5 * 1024 * 1024)
    error = refusal("kit", "big.csv", content)
    assert (error.status, error.message) == (413, TOO_LARGE)


def test_not_utf8():
    error = refusal("kit", "latin1.csv", "email_address,first_name\nz@b.co,Zoé\n".encode("latin-1"))
    assert (error.status, error.message) == (400, "The file must be UTF-8 encoded CSV")


def test_rows_are_bounded(monkeypatch):
    monkeypatch.setattr(formats, "MAX_EXPORT_ROWS", 3)
    content = b"email_address\n" + b"".join(b"u%d@b.co\n" % i for i in range(4))
    error = refusal("kit", "s.csv", content)
    assert (error.status, error.message) == (413, formats.TOO_MANY_ROWS)
    assert len(read_export("kit", "s.csv", content[: content.index(b"u3")]).contacts) == 3


def test_an_archived_csv_may_exceed_5_mb_within_the_archive_limits():
    # 6 MB of notes that do not compress: the archive stays under 5 MB, the ratio low.
    notes = [base64.b64encode(os.urandom(75_000)) for _ in range(60)]
    rows = b"".join(b"u%d@analytical-engine.co,%s\n" % (i, n) for i, n in enumerate(notes))
    content = b'"Email Address",NOTES\n' + rows
    assert len(content) > 5 * 1024 * 1024
    export = read_export("mailchimp", "a.zip", zipped({SUBSCRIBED: content}))
    assert len(export.contacts) == 60
    assert export.contacts[59].email == "u59@analytical-engine.co"
    assert export.fields == []  # NOTES is Mailchimp's
