// Render the math that pymdownx.arithmatex (generic mode) leaves as \( … \) and \[ … \].
// KaTeX is vendored under docs/javascripts/katex/, so no page needs the network.
document$.subscribe(({ body }) => {
  renderMathInElement(body, {
    delimiters: [
      { left: "\\(", right: "\\)", display: false },
      { left: "\\[", right: "\\]", display: true },
    ],
    throwOnError: false,
  });
});
