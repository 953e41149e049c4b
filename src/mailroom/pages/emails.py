"""The system emails a subscriber gets (today the double opt-in confirmation), in the
contact's language with the same words as the pages they lead to."""

from __future__ import annotations

from pathlib import Path

from jinja2 import Environment, FileSystemLoader, select_autoescape

from mailroom.pages.i18n import words

_EMAILS = Environment(
    loader=FileSystemLoader(Path(__file__).parent / "templates"),
    autoescape=select_autoescape(["html"]),
)


def confirmation_email(
    language: str | None, workspace: str, list_name: str | None, email: str, link: str
) -> dict[str, str]:
    """`subject`, `html_content` and `text_content` of the confirmation email (`list_name`
    None: a signup form that joins no list, so the subscription is to the workspace's mail)."""
    lang, t = words(language)
    what = list_name if list_name is not None else t["form_everything"]
    question = t["confirm_question"].format(email=email, list=what, workspace=workspace)
    subject = (
        t["confirm_email_subject"].format(list=list_name, workspace=workspace)
        if list_name is not None
        else t["confirm_email_subject_all"].format(workspace=workspace)
    )
    html = _EMAILS.get_template("confirm_email.html").render(
        lang=lang, t=t, subject=subject, question=question, workspace=workspace, link=link
    )
    text = f"{question}\n\n{t['confirm_email_button']}: {link}\n\n{t['confirm_email_ignore']}\n"
    return {"subject": subject, "html_content": html, "text_content": text}
