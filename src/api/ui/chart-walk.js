// Which transitions of the session chart a step of a node's story took: what the node page draws
// as the path that led where the node is. Pure, so it is tested beside the chart it reads.

/**
 * The transitions of the chart a step of the story took, by their index: the one its event
 * triggered, from the state it left or a state around it, then the eventless ones, and those of
 * an event raised by a state it entered (`raises`), that led on to where it rests.
 */
export function takenBy(chart, step) {
  const byId = new Map(chart.states.map((state) => [state.id, state]));
  const within = (id, around) => {
    for (let at = id; at !== undefined; at = byId.get(at)?.parent) if (at === around) return true;
    return false;
  };
  // Entering a state enters its initial child, down to a state with none.
  const restsIn = (id) => {
    let at = id;
    while (byId.get(at)?.initial !== undefined) at = byId.get(at).initial;
    return at;
  };
  const movesOn = (from, takes) =>
    chart.transitions.flatMap(({ trigger, source, targets }, index) =>
      takes(trigger) && targets.length > 0 && within(from, source) ? targets.map((target) => ({ index, to: restsIn(target), target })) : [],
    );
  // Within a step, eventless transitions go before a raised event is taken.
  const next = (from) => {
    const eventless = movesOn(from, (trigger) => trigger.kind === 'always');
    const raises = byId.get(from)?.raises ?? [];
    return eventless.length > 0 ? eventless : movesOn(from, (trigger) => trigger.kind === 'event' && raises.includes(trigger.event));
  };
  let walks = movesOn(step.from, (trigger) => trigger.kind !== 'always' && trigger.event === step.event).map((move) => ({ ...move, taken: [move.index] }));
  // A walk into a state around the one it rests in counts only if no walk reaches that state itself.
  let around;
  for (let depth = 0; depth < chart.states.length && walks.length > 0; depth++) {
    const arrived = walks.find((walk) => walk.to === step.to);
    if (arrived !== undefined) return arrived.taken;
    around ??= walks.find((walk) => within(step.to, walk.target));
    walks = walks.flatMap((walk) => next(walk.to).map((move) => ({ ...move, taken: [...walk.taken, move.index] })));
  }
  return around?.taken ?? [];
}
