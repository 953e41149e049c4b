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


# Double opt-in confirmation and the preferences page.
PHRASES["en"].update(
    confirm_title="Confirm your subscription",
    confirm_question="Confirm that {email} wants to receive {list} from {workspace}.",
    confirm_button="Confirm",
    confirmed_title="Subscription confirmed",
    confirmed="{email} will receive {list} from {workspace}.",
    expired_title="This link has expired",
    expired="Confirmation links work for 7 days. We can send a new one to {email}.",
    resend_button="Send a new link",
    resent="A new confirmation email is on its way to {email}.",
    prefs_title="Your email preferences",
    prefs_intro="Choose what {workspace} sends to {email}.",
    prefs_lists="Lists",
    first_name="First name",
    last_name="Last name",
    language="Language",
    save="Save",
    saved="Your preferences are saved.",
    unsubscribe_all="Unsubscribe from everything",
)
PHRASES["fr"].update(
    confirm_title="Confirmez votre inscription",
    confirm_question="Confirmez que {email} souhaite recevoir {list} de {workspace}.",
    confirm_button="Confirmer",
    confirmed_title="Inscription confirmée",
    confirmed="{email} recevra {list} de {workspace}.",
    expired_title="Ce lien a expiré",
    expired="Les liens de confirmation sont valables 7 jours. Nous pouvons en envoyer un "
    "nouveau à {email}.",
    resend_button="Envoyer un nouveau lien",
    resent="Un nouvel e-mail de confirmation a été envoyé à {email}.",
    prefs_title="Vos préférences e-mail",
    prefs_intro="Choisissez ce que {workspace} envoie à {email}.",
    prefs_lists="Listes",
    first_name="Prénom",
    last_name="Nom",
    language="Langue",
    save="Enregistrer",
    saved="Vos préférences sont enregistrées.",
    unsubscribe_all="Me désabonner de tout",
)
PHRASES["de"].update(
    confirm_title="Anmeldung bestätigen",
    confirm_question="Bestätigen Sie, dass {email} {list} von {workspace} erhalten möchte.",
    confirm_button="Bestätigen",
    confirmed_title="Anmeldung bestätigt",
    confirmed="{email} erhält {list} von {workspace}.",
    expired_title="Dieser Link ist abgelaufen",
    expired="Bestätigungslinks gelten 7 Tage. Wir können einen neuen an {email} senden.",
    resend_button="Neuen Link senden",
    resent="Eine neue Bestätigungs-E-Mail ist unterwegs an {email}.",
    prefs_title="Ihre E-Mail-Einstellungen",
    prefs_intro="Wählen Sie, was {workspace} an {email} sendet.",
    prefs_lists="Listen",
    first_name="Vorname",
    last_name="Nachname",
    language="Sprache",
    save="Speichern",
    saved="Ihre Einstellungen sind gespeichert.",
    unsubscribe_all="Von allem abmelden",
)
PHRASES["es"].update(
    confirm_title="Confirma tu suscripción",
    confirm_question="Confirma que {email} quiere recibir {list} de {workspace}.",
    confirm_button="Confirmar",
    confirmed_title="Suscripción confirmada",
    confirmed="{email} recibirá {list} de {workspace}.",
    expired_title="Este enlace ha caducado",
    expired="Los enlaces de confirmación valen 7 días. Podemos enviar uno nuevo a {email}.",
    resend_button="Enviar un enlace nuevo",
    resent="Un nuevo correo de confirmación va de camino a {email}.",
    prefs_title="Tus preferencias de correo",
    prefs_intro="Elige lo que {workspace} envía a {email}.",
    prefs_lists="Listas",
    first_name="Nombre",
    last_name="Apellidos",
    language="Idioma",
    save="Guardar",
    saved="Tus preferencias se han guardado.",
    unsubscribe_all="Darme de baja de todo",
)
PHRASES["pt"].update(
    confirm_title="Confirme sua inscrição",
    confirm_question="Confirme que {email} quer receber {list} de {workspace}.",
    confirm_button="Confirmar",
    confirmed_title="Inscrição confirmada",
    confirmed="{email} receberá {list} de {workspace}.",
    expired_title="Este link expirou",
    expired="Os links de confirmação valem 7 dias. Podemos enviar um novo para {email}.",
    resend_button="Enviar um novo link",
    resent="Um novo e-mail de confirmação está a caminho de {email}.",
    prefs_title="Suas preferências de e-mail",
    prefs_intro="Escolha o que {workspace} envia para {email}.",
    prefs_lists="Listas",
    first_name="Nome",
    last_name="Sobrenome",
    language="Idioma",
    save="Salvar",
    saved="Suas preferências foram salvas.",
    unsubscribe_all="Cancelar tudo",
)
LANGUAGES = {"en": "English", "fr": "Français", "de": "Deutsch", "es": "Español", "pt": "Português"}

# The double opt-in email (pages.emails).
PHRASES["en"].update(
    confirm_email_subject="Please confirm your subscription to {list}",
    confirm_email_button="Yes, subscribe me",
    confirm_email_ignore="If you did not ask for this, ignore this email: you will not be added. The link works for 7 days:",
)
PHRASES["fr"].update(
    confirm_email_subject="Confirmez votre inscription à {list}",
    confirm_email_button="Oui, je m'inscris",
    confirm_email_ignore="Si vous n'avez rien demandé, ignorez cet e-mail : vous ne serez pas inscrit. Le lien est valable 7 jours :",
)
PHRASES["de"].update(
    confirm_email_subject="Bitte bestätigen Sie Ihre Anmeldung zu {list}",
    confirm_email_button="Ja, ich möchte mich anmelden",
    confirm_email_ignore="Wenn Sie das nicht angefordert haben, ignorieren Sie diese E-Mail: Sie werden nicht eingetragen. Der Link ist 7 Tage gültig:",
)
PHRASES["es"].update(
    confirm_email_subject="Confirma tu suscripción a {list}",
    confirm_email_button="Sí, suscribirme",
    confirm_email_ignore="Si no lo has pedido, ignora este correo: no se te añadirá. El enlace es válido durante 7 días:",
)
PHRASES["pt"].update(
    confirm_email_subject="Confirme a sua inscrição em {list}",
    confirm_email_button="Sim, quero inscrever-me",
    confirm_email_ignore="Se não pediu isto, ignore este e-mail: não será adicionado. O link é válido durante 7 dias:",
)

# Signup forms (forms.pages): the hosted page, its messages and its confirmation.
PHRASES["en"].update(
    form_tick="{label}: tick this box to continue",
    confirm_email_subject_all="Please confirm your subscription to {workspace}",
    email="Email",
    form_submit="Subscribe",
    form_optional="optional",
    form_thanks_title="Thank you",
    form_thanks="Thanks for subscribing!",
    form_check_email="Almost done: we sent an email to confirm your subscription. Open it and "
    "click the button inside.",
    form_errors_title="Please check the form",
    form_required="{label} is required",
    form_bad_email="{label} must be a valid email address",
    form_too_long="{label} must be {n} characters or fewer",
    form_number="{label} must be a number",
    form_date="{label} must be a date like 2026-05-31",
    form_choice="{label} must be one of: {options}",
    form_boolean="{label} must be true or false",
    form_limited_title="Too many attempts",
    form_limited="Please wait a minute and try again.",
    form_unavailable="This form cannot take sign-ups right now. Please try again later.",
    form_everything="emails",
    form_choose="Choose…",
)
PHRASES["fr"].update(
    form_tick="{label} : cochez cette case pour continuer",
    confirm_email_subject_all="Confirmez votre inscription à {workspace}",
    email="E-mail",
    form_submit="S'inscrire",
    form_optional="facultatif",
    form_thanks_title="Merci",
    form_thanks="Merci pour votre inscription !",
    form_check_email="Presque fini : nous vous avons envoyé un e-mail pour confirmer votre "
    "inscription. Ouvrez-le et cliquez sur le bouton.",
    form_errors_title="Veuillez vérifier le formulaire",
    form_required="{label} est obligatoire",
    form_bad_email="{label} doit être une adresse e-mail valide",
    form_too_long="{label} doit faire au plus {n} caractères",
    form_number="{label} doit être un nombre",
    form_date="{label} doit être une date comme 2026-05-31",
    form_choice="{label} doit être l'une de ces valeurs : {options}",
    form_boolean="{label} doit être vrai ou faux",
    form_limited_title="Trop de tentatives",
    form_limited="Veuillez patienter une minute et réessayer.",
    form_unavailable="Ce formulaire ne peut pas prendre d'inscriptions pour le moment. "
    "Réessayez plus tard.",
    form_everything="les e-mails",
    form_choose="Choisir…",
)
PHRASES["de"].update(
    form_tick="{label}: Bitte kreuzen Sie dieses Feld an",
    confirm_email_subject_all="Bitte bestätigen Sie Ihre Anmeldung bei {workspace}",
    email="E-Mail",
    form_submit="Anmelden",
    form_optional="optional",
    form_thanks_title="Vielen Dank",
    form_thanks="Danke für Ihre Anmeldung!",
    form_check_email="Fast geschafft: Wir haben Ihnen eine E-Mail zur Bestätigung geschickt. "
    "Öffnen Sie sie und klicken Sie auf die Schaltfläche.",
    form_errors_title="Bitte prüfen Sie das Formular",
    form_required="{label} ist erforderlich",
    form_bad_email="{label} muss eine gültige E-Mail-Adresse sein",
    form_too_long="{label} darf höchstens {n} Zeichen lang sein",
    form_number="{label} muss eine Zahl sein",
    form_date="{label} muss ein Datum wie 2026-05-31 sein",
    form_choice="{label} muss einer dieser Werte sein: {options}",
    form_boolean="{label} muss wahr oder falsch sein",
    form_limited_title="Zu viele Versuche",
    form_limited="Bitte warten Sie eine Minute und versuchen Sie es erneut.",
    form_unavailable="Dieses Formular nimmt gerade keine Anmeldungen an. Bitte versuchen Sie "
    "es später erneut.",
    form_everything="E-Mails",
    form_choose="Auswählen…",
)
PHRASES["es"].update(
    form_tick="{label}: marca esta casilla para continuar",
    confirm_email_subject_all="Confirma tu suscripción a {workspace}",
    email="Correo electrónico",
    form_submit="Suscribirme",
    form_optional="opcional",
    form_thanks_title="Gracias",
    form_thanks="¡Gracias por suscribirte!",
    form_check_email="Casi listo: te hemos enviado un correo para confirmar tu suscripción. "
    "Ábrelo y pulsa el botón.",
    form_errors_title="Revisa el formulario",
    form_required="{label} es obligatorio",
    form_bad_email="{label} debe ser una dirección de correo válida",
    form_too_long="{label} debe tener como máximo {n} caracteres",
    form_number="{label} debe ser un número",
    form_date="{label} debe ser una fecha como 2026-05-31",
    form_choice="{label} debe ser uno de: {options}",
    form_boolean="{label} debe ser verdadero o falso",
    form_limited_title="Demasiados intentos",
    form_limited="Espera un minuto y vuelve a intentarlo.",
    form_unavailable="Este formulario no acepta suscripciones ahora mismo. Inténtalo más tarde.",
    form_everything="correos",
    form_choose="Elegir…",
)
PHRASES["pt"].update(
    form_tick="{label}: marque esta caixa para continuar",
    confirm_email_subject_all="Confirme a sua inscrição em {workspace}",
    email="E-mail",
    form_submit="Inscrever-me",
    form_optional="opcional",
    form_thanks_title="Obrigado",
    form_thanks="Obrigado por se inscrever!",
    form_check_email="Quase pronto: enviámos um e-mail para confirmar a sua inscrição. Abra-o "
    "e clique no botão.",
    form_errors_title="Verifique o formulário",
    form_required="{label} é obrigatório",
    form_bad_email="{label} deve ser um endereço de e-mail válido",
    form_too_long="{label} deve ter no máximo {n} caracteres",
    form_number="{label} deve ser um número",
    form_date="{label} deve ser uma data como 2026-05-31",
    form_choice="{label} deve ser um de: {options}",
    form_boolean="{label} deve ser verdadeiro ou falso",
    form_limited_title="Demasiadas tentativas",
    form_limited="Aguarde um minuto e tente novamente.",
    form_unavailable="Este formulário não aceita inscrições neste momento. Tente mais tarde.",
    form_everything="e-mails",
    form_choose="Escolher…",
)
