// The listen page's player: plays PCM as it arrives and measures what was heard, sample-exactly.
//
// Messages in (from the page): {type: "turn", turn, prebufferFrames, threshold} starts a turn;
// {type: "pcm", samples: Float32Array} queues audio; {type: "end"} says no more audio will come.
// Messages out: {type: "playing", turn, frame} when playback starts (after the prebuffer),
// {type: "audible", turn, frame} at the first rendered sample whose magnitude reaches the threshold,
// {type: "underrun", turn, frame, frames} when playback ran dry after it started and audio came
// again (frame: where the silence began, frames: how long it lasted), {type: "finished", turn, frame}.
// Frames are AudioContext sample frames (currentFrame + offset); the page maps them to its clock.
class PcmPlayer extends AudioWorkletProcessor {
  constructor() {
    super();
    this.queue = [];
    this.readOffset = 0; // into queue[0]
    this.buffered = 0; // frames queued and not yet played
    this.turn = null;
    this.port.onmessage = (event) => this.onMessage(event.data);
  }

  onMessage(message) {
    switch (message.type) {
      case "turn":
        this.queue = [];
        this.readOffset = 0;
        this.buffered = 0;
        this.turn = {
          id: message.turn,
          prebufferFrames: message.prebufferFrames || 0,
          threshold: message.threshold,
          started: false,
          audible: false,
          ended: false,
          finished: false,
          dryFrom: null, // frame at which the queue ran dry while more audio was due
        };
        break;
      case "pcm":
        if (this.turn && message.samples.length) {
          this.queue.push(message.samples);
          this.buffered += message.samples.length;
        }
        break;
      case "end":
        if (this.turn) {
          this.turn.ended = true;
          // Silence after the last audio is the end, not an underrun; but audio still queued (it may
          // have come in the same burst as this message) ends the dry spell as an underrun.
          if (this.buffered === 0) this.turn.dryFrom = null;
        }
        break;
    }
  }

  process(inputs, outputs) {
    const out = outputs[0][0];
    const turn = this.turn;
    let i = 0;
    if (turn && !turn.finished) {
      if (!turn.started && this.buffered > 0 && (this.buffered >= turn.prebufferFrames || turn.ended)) {
        turn.started = true;
        this.port.postMessage({ type: "playing", turn: turn.id, frame: currentFrame });
      }
      if (turn.started) {
        while (i < out.length && this.queue.length) {
          if (turn.dryFrom !== null) {
            const frames = currentFrame + i - turn.dryFrom;
            this.port.postMessage({ type: "underrun", turn: turn.id, frame: turn.dryFrom, frames });
            turn.dryFrom = null;
          }
          const chunk = this.queue[0];
          const n = Math.min(out.length - i, chunk.length - this.readOffset);
          for (let k = 0; k < n; k++) {
            const sample = chunk[this.readOffset + k];
            out[i + k] = sample;
            if (!turn.audible && Math.abs(sample) >= turn.threshold) {
              turn.audible = true;
              this.port.postMessage({ type: "audible", turn: turn.id, frame: currentFrame + i + k });
            }
          }
          i += n;
          this.readOffset += n;
          this.buffered -= n;
          if (this.readOffset >= chunk.length) {
            this.queue.shift();
            this.readOffset = 0;
          }
        }
        if (i < out.length) {
          if (turn.ended) {
            turn.finished = true;
            this.port.postMessage({ type: "finished", turn: turn.id, frame: currentFrame + i });
          } else if (turn.dryFrom === null) {
            turn.dryFrom = currentFrame + i;
          }
        }
      }
    }
    out.fill(0, i);
    return true;
  }
}

registerProcessor("pcm-player", PcmPlayer);
