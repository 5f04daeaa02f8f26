"""A plain-text progress bar (tqdm's when installed), with elapsed and estimated remaining time."""

from __future__ import annotations

import sys
import time


def _clock(seconds: float) -> str:
    seconds = int(seconds)
    return f"{seconds // 60:02d}:{seconds % 60:02d}"


class Progress:
    """``with Progress(total) as bar: bar.start(label); ...; bar.done()``; weights are costs."""

    def __init__(self, total: float, stream=None, width: int = 28):
        self.total, self.width = max(total, 1e-9), width
        self.stream = stream or sys.stderr
        self.done_weight, self.began = 0.0, time.perf_counter()
        self.label, self.weight = "", 0.0
        self.tty = hasattr(self.stream, "isatty") and self.stream.isatty()
        try:
            from tqdm import tqdm
            self._tqdm = tqdm(total=round(total, 3), file=self.stream, unit="task")
        except ImportError:
            self._tqdm = None

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        if self._tqdm is not None:
            self._tqdm.close()
        elif self.tty:
            self.stream.write("\n")
        self.stream.flush()

    def start(self, label: str, weight: float = 1.0) -> None:
        """Announce the next task, ``weight`` being its expected share of the total."""
        self.label, self.weight = label, weight
        if self._tqdm is not None:
            self._tqdm.set_postfix_str(label)
        elif self.tty:
            self._draw()

    def done(self, note: str = "") -> None:
        self.done_weight += self.weight
        if self._tqdm is not None:
            self._tqdm.update(round(self.weight, 3))
        else:
            self._draw(note)

    def _draw(self, note: str = "") -> None:
        frac = min(1.0, self.done_weight / self.total)
        elapsed = time.perf_counter() - self.began
        left = elapsed / frac * (1.0 - frac) if frac > 0.02 else float("nan")
        filled = int(round(frac * self.width))
        bar = "#" * filled + "-" * (self.width - filled)
        eta = "--:--" if left != left else _clock(left)
        text = f"[{bar}] {100 * frac:3.0f}% {_clock(elapsed)} elapsed, ~{eta} left  {self.label}"
        if self.tty:
            self.stream.write("\r" + text[:110].ljust(110))
        else:
            self.stream.write(text + (f"  {note}" if note else "") + "\n")
        self.stream.flush()
