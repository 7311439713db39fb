// Where a conversation's stream is: the highest seq shown. Every seq reaches the page once, whatever the server
// resends (a replay overlapping what was seen live).

export function createSeqTracker(sinceSeq) {
  let lastSeq = sinceSeq;
  let duplicates = 0;
  return {
    /** The highest seq shown so far; a reconnect asks for the frames after it. */
    get lastSeq() {
      return lastSeq;
    },
    /** How many resent frames were dropped as already seen. */
    get duplicates() {
      return duplicates;
    },
    /** Whether to show `event`: frames without a seq always, the others once each, in order. */
    isNew(event) {
      if (typeof event.seq !== 'number') return true;
      // Dedupe by seq: a resent frame (replay overlapping what we saw live) is dropped here.
      if (event.seq <= lastSeq) {
        duplicates += 1;
        return false;
      }
      lastSeq = event.seq;
      return true;
    },
    /** A hello behind what we saw means the server restarted: start again from seq 0 and answer true. */
    restartIfBehind(serverLastSeq) {
      // Seqs restart with the server; without this, dedupe would swallow every new frame.
      if (typeof serverLastSeq === 'number' && serverLastSeq < lastSeq) {
        lastSeq = 0;
        return true;
      }
      return false;
    },
  };
}
