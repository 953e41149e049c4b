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
