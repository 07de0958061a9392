// A short two-note chime made with WebAudio: no sound file to ship, load or allow in the page's CSP.

let audio = null;

/**
 * Plays the chime. Browsers start sound only after the person touched the page (signing in counts); before that,
 * or where WebAudio is missing, it stays silent and says so by resolving false.
 */
export async function chime() {
  const Context = window.AudioContext ?? window.webkitAudioContext;
  if (!Context) return false;
  try {
    audio ??= new Context();
    if (audio.state === 'suspended') await audio.resume();
    if (audio.state !== 'running') return false;
    const start = audio.currentTime;
    for (const [offset, frequency] of [
      [0, 880],
      [0.18, 1320],
    ]) {
      const tone = audio.createOscillator();
      const volume = audio.createGain();
      tone.type = 'sine';
      tone.frequency.value = frequency;
      // A quick fade in and out: a click-free ping, quiet enough for an open office.
      volume.gain.setValueAtTime(0.0001, start + offset);
      volume.gain.exponentialRampToValueAtTime(0.2, start + offset + 0.02);
      volume.gain.exponentialRampToValueAtTime(0.0001, start + offset + 0.16);
      tone.connect(volume).connect(audio.destination);
      tone.start(start + offset);
      tone.stop(start + offset + 0.17);
    }
    return true;
  } catch {
    return false;
  }
}
