"""The words of the subscriber pages, in the contact's language (English when unknown).

A small catalog kept as data: five languages of a dozen phrases each. (DESIGN.md names Babel
catalogs for when the dashboard and system emails bring hundreds of phrases.)
"""

from __future__ import annotations

DEFAULT = "en"

PHRASES: dict[str, dict[str, str]] = {
    "en": {
        "title": "Unsubscribe",
        "question": "Stop receiving emails from {workspace} at {email}?",
        "button": "Unsubscribe",
        "done_title": "You are unsubscribed",
        "done": "{email} will no longer receive emails from {workspace}.",
        "already": "{email} was already unsubscribed from {workspace}.",
        "not_found_title": "Link not valid",
        "not_found": "This link is not valid or no longer works. If you want to stop "
        "receiving these emails, use the link in a recent one.",
    },
    "fr": {
        "title": "Se désabonner",
        "question": "Ne plus recevoir les e-mails de {workspace} à {email} ?",
        "button": "Me désabonner",
        "done_title": "Vous êtes désabonné",
        "done": "{email} ne recevra plus d'e-mails de {workspace}.",
        "already": "{email} était déjà désabonné de {workspace}.",
        "not_found_title": "Lien non valide",
        "not_found": "Ce lien n'est pas valide ou ne fonctionne plus. Pour ne plus recevoir "
        "ces e-mails, utilisez le lien d'un message récent.",
    },
    "de": {
        "title": "Abmelden",
        "question": "Keine E-Mails mehr von {workspace} an {email} erhalten?",
        "button": "Abmelden",
        "done_title": "Sie sind abgemeldet",
        "done": "{email} erhält keine E-Mails mehr von {workspace}.",
        "already": "{email} war bereits von {workspace} abgemeldet.",
        "not_found_title": "Ungültiger Link",
        "not_found": "Dieser Link ist ungültig oder funktioniert nicht mehr. Um diese E-Mails "
        "nicht mehr zu erhalten, nutzen Sie den Link in einer neueren Nachricht.",
    },
    "es": {
        "title": "Darse de baja",
        "question": "¿Dejar de recibir correos de {workspace} en {email}?",
        "button": "Darme de baja",
        "done_title": "Te has dado de baja",
        "done": "{email} ya no recibirá correos de {workspace}.",
        "already": "{email} ya estaba dado de baja de {workspace}.",
        "not_found_title": "Enlace no válido",
        "not_found": "Este enlace no es válido o ya no funciona. Para dejar de recibir estos "
        "correos, usa el enlace de un mensaje reciente.",
    },
    "pt": {
        "title": "Cancelar inscrição",
        "question": "Deixar de receber e-mails de {workspace} em {email}?",
        "button": "Cancelar inscrição",
        "done_title": "Inscrição cancelada",
        "done": "{email} não receberá mais e-mails de {workspace}.",
        "already": "A inscrição de {email} em {workspace} já estava cancelada.",
        "not_found_title": "Link inválido",
        "not_found": "Este link é inválido ou não funciona mais. Para deixar de receber estes "
        "e-mails, use o link de uma mensagem recente.",
    },
}


def words(language: str | None) -> tuple[str, dict[str, str]]:
    """(language used, its phrases)."""
    code = (language or DEFAULT).lower()
    if code not in PHRASES:
        code = DEFAULT
    return code, PHRASES[code]
