package store

import (
	"context"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/cockroachdb/errors"
)

// Entry is one name directly under a listed directory.
type Entry struct {
	Name string
	Dir  bool // a directory (an S3 common prefix)
}

// List lists the names directly under a directory — a local path, a file: URL or an s3://
// prefix — in the store's order, within Options.Roots when Confined (a watched location of a
// retention policy is listed only there). A directory that does not exist is ErrNotFound: a
// wrong path must never read as an empty one. On S3 a prefix with no key under it cannot be
// told from a missing one, so it is ErrNotFound too, once the bucket is known to exist.
func List(ctx context.Context, p string, opts Options) ([]Entry, error) {
	cwd, _ := os.Getwd()
	scheme, raw, err := splitRef(p, cwd)
	if err != nil {
		return nil, err
	}
	var c *confinement
	if opts.Confined {
		c = &confinement{roots: resolveRoots(opts.Roots)}
	}
	if scheme == "file" {
		_, entries, err := listLocal(raw, c)
		return entries, err
	}
	ref, err := parseS3(p, raw)
	if err != nil {
		return nil, err
	}
	return listS3(ctx, ref, c)
}

// listLocal lists raw, confined, and says where it resolved to.
func listLocal(raw string, c *confinement) (string, []Entry, error) {
	if err := c.check(Ref{Scheme: "file", Path: filepath.Clean(raw)}, "watched location"); err != nil {
		return "", nil, err
	}
	real, err := filepath.EvalSymlinks(raw)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return "", nil, errors.Mark(errors.Newf("watched location %s does not exist: expected a checkpoint base directory, one job's checkpoint directory or a savepoint directory", raw), ErrNotFound)
		}
		return "", nil, errors.Newf("watched location %s: %v", raw, err)
	}
	real = filepath.Clean(real)
	if err := c.check(Ref{Scheme: "file", Path: real}, "watched location"); err != nil {
		return "", nil, err
	}
	entries, err := readLocalDir(real, raw)
	return real, entries, err
}

// readLocalDir lists the resolved directory real (raw is what errors name).
func readLocalDir(real, raw string) ([]Entry, error) {
	des, err := os.ReadDir(real)
	if err != nil {
		return nil, errors.Newf("list watched location %s: %v", raw, err)
	}
	out := make([]Entry, 0, len(des))
	for _, de := range des {
		dir := de.IsDir()
		if de.Type()&fs.ModeSymlink != 0 { // a link to a directory lists as one
			if fi, err := os.Stat(filepath.Join(real, de.Name())); err == nil {
				dir = fi.IsDir()
			}
		}
		out = append(out, Entry{Name: de.Name(), Dir: dir})
	}
	return out, nil
}

func listS3(ctx context.Context, ref Ref, c *confinement) ([]Entry, error) {
	if err := c.check(ref, "watched location"); err != nil {
		return nil, err
	}
	client, endpoint, err := newS3Client(ctx)
	if err != nil {
		return nil, err
	}
	s := &s3Store{client: client, endpoint: endpoint, c: c}
	prefix := ref.Path
	if prefix != "" {
		prefix += "/"
	}
	delim := "/"
	var out []Entry
	pages := s3.NewListObjectsV2Paginator(client, &s3.ListObjectsV2Input{Bucket: &ref.Bucket, Prefix: &prefix, Delimiter: &delim})
	for pages.HasMorePages() {
		page, err := pages.NextPage(ctx)
		if err != nil {
			return nil, errors.Wrapf(s.explain(err, ref), "list watched location %s", ref)
		}
		for _, cp := range page.CommonPrefixes {
			if cp.Prefix != nil {
				out = append(out, Entry{Name: strings.TrimSuffix(strings.TrimPrefix(*cp.Prefix, prefix), "/"), Dir: true})
			}
		}
		for _, o := range page.Contents {
			if o.Key != nil && *o.Key != prefix {
				out = append(out, Entry{Name: strings.TrimPrefix(*o.Key, prefix)})
			}
		}
	}
	if len(out) == 0 {
		if err := s.bucketExists(ctx, ref.Bucket); err != nil {
			return nil, err
		}
		return nil, errors.Mark(errors.Newf("watched location %s holds nothing at %s: expected a checkpoint base directory, one job's checkpoint directory or a savepoint directory", ref, endpoint), ErrNotFound)
	}
	return out, nil
}
