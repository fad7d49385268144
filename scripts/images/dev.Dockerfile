# Development images for the chart's opt-in in-chart dependencies. NOT for production: one
# replica, no persistence (Redis) or a single node (Qdrant), no authentication inside the cluster.
# Built by scripts/images/build.sh from a context folder holding runtime-os.sh and the vendored
# Qdrant server binary (the one scripts/setup.d/45-qdrant.sh installs); same user and hardening as the app images.
ARG BASE=node:24-bookworm-slim

# Neither server runs Node: the base's node binary (120 MB) goes too.
FROM ${BASE} AS os-redis
COPY runtime-os.sh /tmp/
RUN sh /tmp/runtime-os.sh redis-server && rm -f /usr/local/bin/node

FROM ${BASE} AS os-qdrant
COPY runtime-os.sh /tmp/
RUN sh /tmp/runtime-os.sh && rm -f /usr/local/bin/node
# Qdrant writes its storage here; mount a volume on it (the image's copy is empty and read-only).
RUN mkdir -p /qdrant/storage && chown 10001:10001 /qdrant/storage

# Redis from Debian's redis-server: every setting on the command line (no config file to mount),
# nothing written to disk, reachable from other pods (protected mode would refuse them).
FROM scratch AS redis
COPY --from=os-redis / /
ENV PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin HOME=/tmp
WORKDIR /tmp
USER 10001:10001
EXPOSE 6379
CMD ["redis-server", "--bind", "0.0.0.0", "--port", "6379", "--protected-mode", "no", \
     "--save", "", "--appendonly", "no", "--dir", "/tmp", "--daemonize", "no"]

# Qdrant: every setting from the environment; started from a folder without config/ so it reads
# no file. Its marker file and snapshots go to /tmp (writable), vectors to /qdrant/storage.
FROM scratch AS qdrant
COPY --from=os-qdrant / /
COPY qdrant /usr/local/bin/qdrant
ENV PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin HOME=/tmp \
    QDRANT__SERVICE__HOST=0.0.0.0 QDRANT__SERVICE__HTTP_PORT=6333 QDRANT__SERVICE__GRPC_PORT=6334 \
    QDRANT__STORAGE__STORAGE_PATH=/qdrant/storage QDRANT__STORAGE__SNAPSHOTS_PATH=/tmp/snapshots \
    QDRANT__TELEMETRY_DISABLED=true QDRANT_INIT_FILE_PATH=/tmp/.qdrant-initialized
WORKDIR /qdrant
USER 10001:10001
EXPOSE 6333 6334
CMD ["qdrant"]
