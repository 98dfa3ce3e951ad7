// The web consoles' only script. Everything works without it: it adds a confirmation
// before destructive actions (forms with data-confirm) and copy buttons for values
// shown once (buttons with data-copy naming the element to copy).
(function () {
  "use strict";
  document.addEventListener("submit", function (ev) {
    var msg = ev.target.getAttribute && ev.target.getAttribute("data-confirm");
    if (msg && !window.confirm(msg)) { ev.preventDefault(); }
  });
  document.addEventListener("click", function (ev) {
    var id = ev.target.getAttribute && ev.target.getAttribute("data-copy");
    if (!id) { return; }
    var el = document.getElementById(id);
    if (el && navigator.clipboard) {
      navigator.clipboard.writeText(el.textContent).then(function () {
        ev.target.textContent = "Copied";
      });
    }
  });
})();
