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
