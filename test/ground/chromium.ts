// Debian's Chromium (the headless shell build, as the scraper runs it) driven by playwright-core, with flags that work offline: no sandbox when
// root (containers), no background networking, component updates, sync or QUIC.
import { createHash, X509Certificate } from "node:crypto";
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

export function launchChromium(args: string[] = OFFLINE_FLAGS): Promise<Browser> {
  const isRoot = typeof process.getuid === "function" && process.getuid() === 0;
  return chromium.launch({
    executablePath: CHROMIUM_PATH,
    headless: true,
    chromiumSandbox: !isRoot,
    // playwright gives every launch a fresh temporary profile of its own.
    args,
    timeout: 60_000,
  });
}

/**
 * Chromium that reaches one host name besides loopback: `host` resolves to `address` and skips
 * the dead proxy (everything else still goes to it), and the server's certificate is trusted only
 * when its public key hashes to `spki` (base64 SHA-256 of the DER SubjectPublicKeyInfo, as
 * spkiSha256 makes it): every other certificate error still fails the page.
 */
export function launchChromiumReaching(host: string, address: string, spki: string): Promise<Browser> {
  return launchChromium([
    ...OFFLINE_FLAGS,
    `--proxy-bypass-list=${host}`,
    `--host-resolver-rules=MAP ${host} ${address}`,
    `--ignore-certificate-errors-spki-list=${spki}`,
  ]);
}

/** The base64 SHA-256 of a PEM certificate's SubjectPublicKeyInfo (Chromium's SPKI pin). */
export function spkiSha256(certPem: string): string {
  const der = new X509Certificate(certPem).publicKey.export({ type: "spki", format: "der" });
  return createHash("sha256").update(der).digest("base64");
}
