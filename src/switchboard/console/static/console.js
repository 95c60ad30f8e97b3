// The console's only script: live call status over server-sent events. Text is set with
// textContent, never as HTML, so nothing received can run.
(function () {
  "use strict";
  var table = document.querySelector("[data-live-calls]");
  var single = document.querySelector("[data-call-status]");
  if (!table && !single) { return; }
  var source = new EventSource("/admin/calls/live");
  source.addEventListener("call", function (message) {
    var state = JSON.parse(message.data);
    document.querySelectorAll("[data-call-status]").forEach(function (cell) {
      if (cell.getAttribute("data-call-status") === state.callId &&
          cell.textContent !== state.status) {
        cell.textContent = state.status;
        cell.setAttribute("data-updated", "live");
      }
    });
    document.querySelectorAll("[data-call-reason]").forEach(function (cell) {
      if (cell.getAttribute("data-call-reason") === state.callId) {
        cell.textContent = state.endedReason;
      }
    });
    if (!state.endedAtUtc) { return; }
    // An ended call: its end time shows, and there is nothing left to hang up.
    document.querySelectorAll("[data-call-ended]").forEach(function (cell) {
      if (cell.getAttribute("data-call-ended") === state.callId) {
        cell.textContent = state.endedAtUtc;
      }
    });
    document.querySelectorAll("[data-call-hangup]").forEach(function (form) {
      if (form.getAttribute("data-call-hangup") === state.callId) {
        form.remove();
      }
    });
  });
  source.addEventListener("open", function () {
    document.body.setAttribute("data-live", "connected");
  });
})();
