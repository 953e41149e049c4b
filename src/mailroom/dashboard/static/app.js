// Copy buttons: a <button data-copy="#id"> copies that element's value or text. Pages work
// without this script; it only saves selecting the text by hand.
document.addEventListener("click", async (event) => {
  const button = event.target.closest("button[data-copy]");
  if (!button) return;
  const source = document.querySelector(button.dataset.copy);
  if (!source) return;
  const text = "value" in source ? source.value : source.textContent;
  try {
    await navigator.clipboard.writeText(text.trim());
    button.textContent = button.dataset.done || "Copied";
  } catch {
    if (source.select) source.select();
  }
});

// Tag colours: set from data-color through the CSSOM (the CSP allows no inline style).
for (const swatch of document.querySelectorAll(".swatch[data-color]")) {
  if (/^#[0-9a-fA-F]{3,8}$/.test(swatch.dataset.color)) swatch.style.background = swatch.dataset.color;
}

// Template editor: the previews follow the draft. Each frame has its own hidden form posting
// the editor's content to it (a form re-submitted before its last post left replaces that
// one, so a burst of typing sends only the latest). Without this script the frames show the
// saved version.
const editor = document.querySelector("form[data-live-preview]");
if (editor) {
  const parts = ["subject", "preheader", "html_content", "text_content"];
  const posters = [...document.querySelectorAll("iframe[data-part]")].map((frame) => {
    const form = document.createElement("form");
    form.method = "post";
    form.hidden = true;
    form.target = frame.name;
    form.action = "/app/templates/draft-preview" + (frame.dataset.part === "text" ? "?part=text" : "");
    for (const name of ["csrf", "as", ...parts]) {
      const input = document.createElement("input");
      input.type = "hidden";
      input.name = name;
      form.append(input);
    }
    document.body.append(form);
    return form;
  });
  const asWho = document.getElementById("t-as");
  const refresh = () => {
    for (const form of posters) {
      form.elements.csrf.value = editor.elements.csrf.value;
      form.elements.as.value = asWho ? asWho.value : "";
      for (const name of parts) form.elements[name].value = editor.elements[name].value;
      form.submit();
    }
  };
  let timer = null;
  const soon = () => {
    clearTimeout(timer);
    timer = setTimeout(refresh, 400);
  };
  editor.addEventListener("input", soon);
  if (asWho) asWho.addEventListener("change", soon);
  const note = document.getElementById("preview-note");
  if (note) note.textContent = note.dataset.live;
  refresh();

  // Images from the library: inserted into the HTML where the cursor is.
  document.addEventListener("click", (event) => {
    const button = event.target.closest("button[data-insert-image]");
    if (!button) return;
    const area = editor.elements.html_content;
    const alt = (button.dataset.alt || "").replace(/"/g, "&quot;");
    const tag = `<img src="${button.dataset.insertImage}" alt="${alt}" style="max-width:100%;height:auto">`;
    const at = area.selectionStart ?? area.value.length;
    area.value = area.value.slice(0, at) + tag + area.value.slice(area.selectionEnd ?? at);
    area.focus();
    area.selectionStart = area.selectionEnd = at + tag.length;
    soon();
  });
  const showInsert = () => {
    for (const b of document.querySelectorAll("button[data-insert-image]")) b.hidden = false;
  };
  showInsert();
  document.body.addEventListener("htmx:afterSwap", showInsert);
}
