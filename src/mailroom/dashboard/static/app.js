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

// Live previews: a frame marked data-preview-of="<form id>" shows what its data-preview-url
// renders for that form's values as they are now, posted into the frame by a hidden form of
// its own (a form re-submitted before its last post left replaces that one, so a burst of
// typing sends only the latest). The source form may name one more input to send with
// data-preview-with. Without this script the frames show the saved version.
const previews = new Map();
for (const frame of document.querySelectorAll("iframe[data-preview-of]")) {
  const source = document.getElementById(frame.dataset.previewOf);
  if (!source) continue;
  const poster = document.createElement("form");
  poster.method = "post";
  poster.hidden = true;
  poster.target = frame.name;
  poster.action = frame.dataset.previewUrl;
  document.body.append(poster);
  if (!previews.has(source)) previews.set(source, []);
  previews.get(source).push(poster);
}
const postPreview = (source) => {
  const data = new FormData(source);
  const extra = source.dataset.previewWith && document.querySelector(source.dataset.previewWith);
  if (extra) data.set(extra.name, extra.value);
  for (const poster of previews.get(source)) {
    const inputs = [];
    for (const [name, value] of data) {
      if (typeof value !== "string") continue;
      inputs.push(Object.assign(document.createElement("input"), { type: "hidden", name, value }));
    }
    poster.replaceChildren(...inputs);
    poster.submit();
  }
};
for (const source of previews.keys()) {
  let timer = null;
  const soon = () => {
    clearTimeout(timer);
    timer = setTimeout(() => postPreview(source), 400);
  };
  source.addEventListener("input", soon);
  source.addEventListener("change", soon);
  // Part of the form swapped in by htmx (a template picked in the campaign editor): the
  // preview follows the new content, whenever the answer arrives.
  document.body.addEventListener("htmx:afterSettle", (event) => {
    if (source.contains(event.target)) soon();
  });
  const extra = source.dataset.previewWith && document.querySelector(source.dataset.previewWith);
  if (extra) extra.addEventListener("change", soon);
  const note = document.getElementById("preview-note");
  if (note) note.textContent = note.dataset.live;
  postPreview(source);
}

// Template editor: an image from the media library inserted into the HTML at the cursor.
const htmlArea = document.querySelector("#template-editor textarea[name=html_content]");
if (htmlArea) {
  document.addEventListener("click", (event) => {
    const button = event.target.closest("button[data-insert-image]");
    if (!button) return;
    const alt = (button.dataset.alt || "").replace(/&/g, "&amp;").replace(/"/g, "&quot;");
    const tag = `<img src="${button.dataset.insertImage}" alt="${alt}" style="max-width:100%;height:auto">`;
    const at = htmlArea.selectionStart ?? htmlArea.value.length;
    htmlArea.value = htmlArea.value.slice(0, at) + tag + htmlArea.value.slice(htmlArea.selectionEnd ?? at);
    htmlArea.focus();
    htmlArea.selectionStart = htmlArea.selectionEnd = at + tag.length;
    htmlArea.dispatchEvent(new Event("input", { bubbles: true }));
  });
  const showInsert = () => {
    for (const b of document.querySelectorAll("button[data-insert-image]")) b.hidden = false;
  };
  showInsert();
  document.body.addEventListener("htmx:afterSwap", showInsert);
}
