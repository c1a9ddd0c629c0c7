// Package store opens a Flink checkpoint or savepoint where an operator names it — a local
// path, a file: URL or an s3:// URL — as the checkpoint.Store that package checkpoint reads
// through, and decides which locations a worker may read (Roots, --checkpoint-root).
//
// S3 goes through the AWS SDK for Go v2 (service/s3 and config), not gocloud.dev/blob: both
// read ranges and take the standard credential chain (gocloud's s3blob is built on the same
// SDK), but gocloud added 17.5 MB to bin/kcleanup (36.2 → 53.7 MB, v0.49.0, for its Google
// Cloud, OpenTelemetry and gRPC dependencies) where the SDK added 0.9 MB (config v1.33.19,
// s3 v1.115.0), and the SDK's own errors tell a missing bucket, a missing object and refused
// credentials apart, which the messages here name. The SDK's chain is the usual one:
// AWS_ACCESS_KEY_ID/AWS_SECRET_ACCESS_KEY(/AWS_SESSION_TOKEN), AWS_PROFILE with the shared
// config and credentials files, web identity (AWS_WEB_IDENTITY_TOKEN_FILE, AWS_ROLE_ARN), SSO,
// ECS and EC2 instance metadata; AWS_ENDPOINT_URL or AWS_ENDPOINT_URL_S3 (or endpoint_url in
// the profile) points it at an S3-compatible server, which is then addressed path-style.
//
// Reading is by ranges: a File fetches the blocks a read touches (1 MiB each, a few kept),
// or a large read's range at once, never a whole object it does not read, and pins the
// object's ETag so that an object replaced while it is read is an error, not a mix.
package store
