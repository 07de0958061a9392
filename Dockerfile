# syntax=docker/dockerfile:1
# Palaver's container image: docs/deploy.md. Its build steps are scripts/build-app.mjs, the script
# test/deploy/container.test.ts runs before it starts the result the way ENTRYPOINT and CMD do and probes it the way
# HEALTHCHECK does, so what is tested is what the image runs.
#
# Node 24 is the active LTS (security fixes until April 2028) and one of the Nodes CI tests on; Debian 13 "trixie" is
# Debian's current stable. The build stage is the full image, whose compiler builds better-sqlite3 when no prebuilt
# binary fits; the runtime stage is -slim (no compiler, no git). Both stages are the same Node and the same Debian, so
# the native module runs on the ABI and glibc it was built for. For builds that repeat exactly, pin the digest
# (node:24-trixie-slim@sha256:…); `--build-arg NODE_VERSION=22` builds on Node 22.
ARG NODE_VERSION=24

FROM node:${NODE_VERSION}-trixie AS build
WORKDIR /src
# What `npm pack` reads, and nothing else of the checkout (tests, benchmarks, local state).
COPY package.json package-lock.json README.md tsconfig.json tsconfig.build.json ./
COPY scripts/ scripts/
COPY src/ src/
COPY bin/ bin/
COPY web/ web/
COPY examples/ examples/
COPY templates/ templates/
# npm's cache survives between builds; the lock file pins what is installed.
RUN --mount=type=cache,target=/root/.npm node scripts/build-app.mjs /src /app

FROM node:${NODE_VERSION}-trixie-slim
ENV NODE_ENV=production \
    PALAVER_HOST=0.0.0.0 \
    PALAVER_PORT=3000
# Palaver is root's and read-only to the process; the agent (config, instructions, tools) is mounted at /app/agent,
# whose data/ (SQLite, a generated cookie secret) is the only folder the process writes.
COPY --from=build /app /app
RUN mkdir -p /app/agent/data && chown node:node /app/agent/data
WORKDIR /app/agent
USER node
EXPOSE 3000
HEALTHCHECK --interval=30s --timeout=5s --start-period=30s --retries=3 \
  CMD ["node", "-e", "fetch(`http://127.0.0.1:${process.env.PALAVER_PORT}/health`).then((r) => process.exit(r.ok ? 0 : 1), () => process.exit(1))"]
ENTRYPOINT ["node", "/app/bin/palaver.js"]
CMD ["start"]
