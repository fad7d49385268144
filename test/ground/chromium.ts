// Debian's Chromium (the headless shell build, as the scraper runs it) driven by playwright-core, with flags that work offline: no sandbox when
// root (containers), no background networking, component updates, sync or QUIC.
import { type Browser, chromium } from "playwright-core";

export const CHROMIUM_PATH = process.env.CHROMIUM_PATH ?? "/usr/lib/chromium/chromium-headless-shell";

export const OFFLINE_FLAGS = [
  "--disable-gpu",
  "--disable-quic",
  "--no-first-run",
  "--disable-background-networking",
  "--disable-component-update",
  "--disable-sync",
  "--disable-default-apps",
  "--disable-dev-shm-usage",
  // Debian's Chromium still calls update and safe-browsing hosts despite the flags above. All
  // non-loopback traffic goes to a proxy address where nothing listens, so nothing leaves the
  // machine; loopback stays direct (Chromium's implicit proxy bypass).
  "--proxy-server=http://127.0.0.1:9",
];

export async function launchChromium(): Promise<Browser> {
  const isRoot = typeof process.getuid === "function" && process.getuid() === 0;
  return chromium.launch({
    executablePath: CHROMIUM_PATH,
    headless: true,
    chromiumSandbox: !isRoot,
    // playwright gives every launch a fresh temporary profile of its own.
    args: OFFLINE_FLAGS,
    timeout: 60_000,
  });
}
