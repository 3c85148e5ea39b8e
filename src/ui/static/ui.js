// Every write asks first: a form with data-confirm is sent only when the person agrees.
document.addEventListener("submit", (event) => {
  const question = event.target.dataset.confirm;
  if (question && !window.confirm(question)) event.preventDefault();
});
