// A tool called at the bottom of a recursion re-enters the engine from the host (its
// promise, its arguments' toJSON). That must not move where the engine stops the next
// recursion: every later recursion ends in a RangeError at the same depth, and the host's
// own stack never overflows (it did: the third round aborted the process).
function depth(n) {
  try {
    return depth(n + 1);
  } catch {
    return n;
  }
}
const depths = [];
const echoed = [];
const atTheBottom = [];
const inToJSON = [];
for (let round = 0; round < 4; round++) {
  // Each round's recursions start from a timer's microtasks, as the last one's did.
  await new Promise((resolve) => setTimeout(resolve, 0));
  depths.push(depth(0));
  // A promise rejected at the bottom: the host's rejection tracker runs JavaScript there
  // (first in the round, while the engine has the loop's limit).
  let afterRejection = -1;
  function rejectAt(n) {
    try {
      return rejectAt(n + 1);
    } catch {
      Promise.reject(0).catch(() => {});
      afterRejection = depth(0);
      return n;
    }
  }
  rejectAt(0);
  atTheBottom.push(afterRejection < depths[0] / 10);
  // The call's promise is awaited once the recursion has unwound.
  function viaPromise(n) {
    try {
      return viaPromise(n + 1);
    } catch {
      return tools.echo({ round });
    }
  }
  echoed.push((await viaPromise(0)).round);
  // A recursion started right after the call, at the bottom: little room is left there.
  let left = -1;
  function thenDeeper(n) {
    try {
      return thenDeeper(n + 1);
    } catch {
      tools.echo({ round });
      left = depth(0);
      return n;
    }
  }
  thenDeeper(0);
  atTheBottom.push(left < depths[0] / 10);
  // The call's arguments convert at the bottom: their toJSON recurses from there.
  let fromToJSON = -1;
  function inArgs(n) {
    try {
      return inArgs(n + 1);
    } catch {
      tools.echo({ toJSON: () => ((fromToJSON = depth(0)), { round }) });
      return n;
    }
  }
  inArgs(0);
  inToJSON.push(fromToJSON < depths[0] / 10);
  // A timer's callback recurses and calls a tool at the bottom; the next one recurses again.
  await new Promise((resolve) => setTimeout(() => { viaPromise(0); resolve(); }, 0));
}
await new Promise((resolve) => setTimeout(resolve, 0));
return {
  sameDepthEveryRound: depths.every((d) => d === depths[0]),
  deep: depths[0] > 1000,
  echoed,
  atTheBottom,
  inToJSON,
  stillUsable: depth(0) === depths[0],
};
