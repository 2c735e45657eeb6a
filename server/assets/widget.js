// aics chat widget: one <script src="https://support.example/widget.js" async></script>
// on a shop page adds a chat button that opens the customer chat in an
// iframe served by the aics server the script came from.
(function () {
  "use strict";
  var script = document.currentScript;
  if (!script || window.__aicsWidget) return;
  window.__aicsWidget = true;
  var base = new URL(script.src).origin;
  var lang = script.getAttribute("data-lang") === "zh" ? "zh" : "en";
  var button = document.createElement("button");
  button.type = "button";
  button.setAttribute("aria-label", lang === "zh" ? "在线客服" : "Chat with us");
  button.textContent = lang === "zh" ? "客服" : "Chat";
  button.style.cssText =
    "position:fixed;right:20px;bottom:20px;z-index:2147483646;border:0;border-radius:999px;" +
    "padding:12px 18px;background:#4f46e5;color:#fff;font:600 14px system-ui,sans-serif;" +
    "box-shadow:0 6px 20px rgba(0,0,0,.2);cursor:pointer";
  var frame = null;
  button.addEventListener("click", function () {
    if (!frame) {
      frame = document.createElement("iframe");
      frame.src = base + "/chat";
      frame.title = button.getAttribute("aria-label");
      frame.setAttribute("data-aics-widget", "");
      frame.style.cssText =
        "position:fixed;right:20px;bottom:80px;z-index:2147483647;width:min(380px,calc(100vw - 40px));" +
        "height:min(600px,calc(100vh - 120px));border:0;border-radius:16px;background:#fff;" +
        "box-shadow:0 12px 40px rgba(0,0,0,.25)";
      document.body.appendChild(frame);
    } else {
      frame.style.display = frame.style.display === "none" ? "block" : "none";
    }
  });
  document.body.appendChild(button);
})();
