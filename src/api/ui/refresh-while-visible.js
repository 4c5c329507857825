// Other instances' changes come through no live feed: what shows them is asked for again on a
// timer, only while the page is visible (a background tab costs the server nothing).

/** Calls `refresh` every `interval` ms while the page is visible, and at once when it becomes visible again; returns the stop. */
export function refreshWhileVisible(interval, refresh) {
  let timer;
  const start = () => {
    timer ??= setInterval(refresh, interval);
  };
  const stop = () => {
    clearInterval(timer);
    timer = undefined;
  };
  const onVisibility = () => {
    if (document.visibilityState !== 'visible') return stop();
    refresh();
    start();
  };
  document.addEventListener('visibilitychange', onVisibility);
  if (document.visibilityState === 'visible') start();
  return () => {
    stop();
    document.removeEventListener('visibilitychange', onVisibility);
  };
}
