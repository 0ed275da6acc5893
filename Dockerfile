# syntax=docker/dockerfile:1

# Build the three binaries (api, worker, admin; see the README) as static executables.
FROM golang:1.26-bookworm AS build
WORKDIR /src
COPY go.mod go.sum ./
RUN go mod download
COPY . .
RUN CGO_ENABLED=0 go build -trimpath -ldflags='-s -w' -o /out/ ./cmd/...

# The runtime image has no shell and no package manager, and runs as an unprivileged user.
FROM gcr.io/distroless/static-debian12:nonroot
COPY --from=build /out/api /out/worker /out/admin /usr/local/bin/
USER nonroot:nonroot
# Standalone mode (no DATABASE_URL or REDIS_URL) keeps SQLite in ./data, which must be writable.
WORKDIR /home/nonroot
EXPOSE 8080
CMD ["api"]
