// Preloaded (node --import) into every service the standalone launcher starts. The children run in
// their own process groups (so a Ctrl-C reaches only the launcher); this ties each to its launcher
// instead: when the IPC channel to the launcher closes — the launcher exited, or was killed with
// SIGKILL — the service gets a SIGTERM and shuts down as it would in a pod. The channel is unref'd
// so it never keeps a service alive by itself.
if (process.channel) {
  process.channel.unref();
  process.once("disconnect", () => process.kill(process.pid, "SIGTERM"));
}
