package store

import (
	"path/filepath"
	"strings"

	"github.com/cockroachdb/errors"
)

// Ref names one file or directory on a store, normalised: what Open reads and what the
// allowlist (Roots) compares. Two spellings of one place give the same Ref: file:/x,
// file:///x, file://localhost/x and /x; s3://, s3a:// and s3p:// (Flink's names for its two
// S3 file systems) over one bucket and key.
type Ref struct {
	Scheme string // "file" or "s3"
	Bucket string // s3 only
	// Path is, for "file", an absolute cleaned path ("/" or without a trailing slash); for
	// "s3", the key without a leading or trailing slash ("" is the bucket's root).
	Path string
}

// String prints a local Ref as a plain path and an S3 one as s3://bucket/key.
func (r Ref) String() string {
	if r.Scheme != "s3" {
		return r.Path
	}
	if r.Path == "" {
		return "s3://" + r.Bucket
	}
	return "s3://" + r.Bucket + "/" + r.Path
}

// ParseRef reads a path as an operator gives it or a checkpoint names it: a local path, a
// file: URL (file:/x, file:///x, file://localhost/x) or an s3://, s3a:// or s3p:// URL. A
// relative local path is taken from cwd ("" refuses it). Nothing is percent-decoded: a %
// is a character of the name, as Flink prints paths, so that "%2e%2e" never means "..".
// Local paths are cleaned lexically here (.. and trailing slashes); Open also resolves
// symbolic links before it compares with the roots. An S3 key with an empty, . or ..
// segment is refused: S3 would take it literally where other tools normalise it, and the
// allowlist must never compare one name while the store reads another.
func ParseRef(s, cwd string) (Ref, error) {
	scheme, raw, err := splitRef(s, cwd)
	if err != nil {
		return Ref{}, err
	}
	if scheme == "file" {
		return Ref{Scheme: "file", Path: filepath.Clean(raw)}, nil
	}
	return parseS3(s, raw)
}

// splitRef finds the scheme and, for a local path, the absolute path before cleaning (Open
// resolves symbolic links on it, where a .. after a link means the link target's parent);
// for S3, what follows the scheme's colon.
func splitRef(s, cwd string) (scheme, rest string, err error) {
	if s == "" {
		return "", "", errors.New("the path is empty: expected a checkpoint or savepoint directory, or its _metadata file")
	}
	for _, c := range s {
		if c < 0x20 || c == 0x7f {
			return "", "", errors.Newf("path %q has a control character: expected a printable path", s)
		}
	}
	scheme, rest, ok := cutScheme(s)
	switch {
	case !ok:
		if !filepath.IsAbs(s) {
			if cwd == "" {
				return "", "", errors.Newf("path %q is relative: expected an absolute path, file:///... or s3://bucket/...", s)
			}
			s = filepath.Join(cwd, s)
		}
		return "file", s, nil
	case scheme == "file":
		if after, ok := strings.CutPrefix(rest, "//"); ok {
			host, path, _ := strings.Cut(after, "/")
			if host != "" && !strings.EqualFold(host, "localhost") {
				return "", "", errors.Newf("path %q names host %q: expected a local file (file:///path or file:/path)", s, host)
			}
			rest = "/" + path
			if path == "" && !strings.HasSuffix(after, "/") {
				return "", "", errors.Newf("path %q names no file: expected file:///path", s)
			}
		}
		if !strings.HasPrefix(rest, "/") {
			return "", "", errors.Newf("path %q is a relative file: URL: expected file:///absolute/path", s)
		}
		return "file", rest, nil
	case scheme == "s3" || scheme == "s3a" || scheme == "s3p":
		return "s3", rest, nil
	default:
		return "", "", errors.Newf("path %q has scheme %q: expected a local path, file:// or s3:// (also s3a://, s3p://)", s, scheme)
	}
}

// cutScheme splits "scheme:rest" when s starts with a URL scheme (RFC 3986: a letter, then
// letters, digits, +, - or .), lower-cased since schemes are case-insensitive.
func cutScheme(s string) (string, string, bool) {
	i := strings.IndexByte(s, ':')
	if i <= 0 {
		return "", "", false
	}
	for j, c := range s[:i] {
		letter := c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z'
		if !letter && (j == 0 || !(c >= '0' && c <= '9' || c == '+' || c == '-' || c == '.')) {
			return "", "", false
		}
	}
	return strings.ToLower(s[:i]), s[i+1:], true
}

func parseS3(s, rest string) (Ref, error) {
	after, ok := strings.CutPrefix(rest, "//")
	if !ok {
		return Ref{}, errors.Newf("path %q is not an S3 URL: expected s3://bucket/key", s)
	}
	bucket, key, _ := strings.Cut(after, "/")
	if err := checkBucket(bucket); err != nil {
		return Ref{}, errors.Newf("path %q: %s", s, err.Error())
	}
	key = strings.TrimSuffix(key, "/")
	if key != "" {
		for _, seg := range strings.Split(key, "/") {
			switch seg {
			case "":
				return Ref{}, errors.Newf("path %q has an empty segment (//) in its key: write the key with single slashes", s)
			case ".", "..":
				return Ref{}, errors.Newf("path %q has a %q segment in its key, which S3 does not resolve: write the key without it", s, seg)
			}
		}
	}
	return Ref{Scheme: "s3", Bucket: bucket, Path: key}, nil
}

// checkBucket accepts S3's bucket names, the legacy ones too (upper case, underscores, up to
// 255 characters in us-east-1), and nothing that could mean a user, a port or a path.
func checkBucket(b string) error {
	if b == "" {
		return errors.New("names no bucket: expected s3://bucket/key")
	}
	if len(b) > 255 {
		return errors.Newf("bucket name has %d characters: expected at most 255", len(b))
	}
	for _, c := range b {
		ok := c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '.' || c == '-' || c == '_'
		if !ok {
			return errors.Newf("bucket name %q has the character %q: expected letters, digits, dots, hyphens and underscores", b, c)
		}
	}
	if strings.Contains(b, "..") {
		return errors.Newf("bucket name %q has \"..\": expected a bucket name", b)
	}
	return nil
}

// Roots are the locations a worker may read checkpoints from (--checkpoint-root).
type Roots []Ref

// ParseRoots reads --checkpoint-root values: absolute local directories, file:// URLs, or
// s3://bucket (the whole bucket) and s3://bucket/prefix (the keys under prefix/).
func ParseRoots(specs []string) (Roots, error) {
	rs := make(Roots, 0, len(specs))
	for _, s := range specs {
		r, err := ParseRef(s, "")
		if err != nil {
			return nil, errors.Newf("--checkpoint-root: %s", err.Error())
		}
		rs = append(rs, r)
	}
	return rs, nil
}

// Allow reports whether r lies under one of the roots: the same scheme and bucket, and the
// root's path itself or below it at a segment boundary (/allowed holds /allowed/x, never
// /allowed-evil; s3://b never holds s3://b-evil). Names are compared exactly, case
// included: a spelling that differs is refused, never guessed the same. No roots allow
// nothing.
func (rs Roots) Allow(r Ref) bool {
	for _, root := range rs {
		if within(root, r) {
			return true
		}
	}
	return false
}

func within(root, r Ref) bool {
	if root.Scheme != r.Scheme || root.Bucket != r.Bucket {
		return false
	}
	if root.Path == "" || root.Path == "/" || r.Path == root.Path { // "" is an S3 bucket's root
		return true
	}
	return strings.HasPrefix(r.Path, root.Path+"/")
}

// String lists the roots for an error message.
func (rs Roots) String() string {
	if len(rs) == 0 {
		return "none"
	}
	s := make([]string, len(rs))
	for i, r := range rs {
		s[i] = r.String()
	}
	return strings.Join(s, ", ")
}
