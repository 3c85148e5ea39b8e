// Every write asks first: a form with data-confirm is sent only when the person agrees.
document.addEventListener("submit", (event) => {
  const question = event.target.dataset.confirm;
  if (question && !window.confirm(question)) event.preventDefault();
});

// A live thread's page asks its small status endpoint every few seconds, and reloads only when the thread moved
// (its state, step, latest checkpoint, counts or holder changed), instead of reloading the whole page each time.
const live = document.querySelector("main[data-poll]");
if (live) {
  let first = null;
  const poll = async () => {
    const answer = await fetch(live.dataset.poll, { headers: { accept: "application/json" }, credentials: "same-origin" });
    if (!answer.ok) return;
    const now = await answer.text();
    if (first === null) first = now;
    if (now !== first) { window.location.reload(); return; }
    window.setTimeout(poll, Number(live.dataset.pollMs));
  };
  poll();
}
