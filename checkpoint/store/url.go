package store

import (
	"context"
	"fmt"
	"maps"
	"net/url"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"

	"github.com/rs/zerolog"
)

// Open makes the store a URL names (see ParseURL), so every tool and config file names stores
// the same way:
//
//	s3://bucket/prefix?endpoint=http://127.0.0.1:7070&region=us-east-1&path_style=true&part_size=64MiB
//	file:///abs/dir
//
// S3 credentials come from the AWS default chain (AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY,
// shared config, instance role); they never belong in the URL.
func Open(ctx context.Context, rawURL string, opts ...OpenOption) (Store, error) {
	var o openOptions
	for _, f := range opts {
		f(&o)
	}
	u, err := ParseURL(rawURL)
	if err != nil {
		return nil, err
	}
	if u.Scheme == SchemeFile {
		return NewDir(u.Dir)
	}
	s3opts := u.S3
	s3opts.Logger = o.logger
	return NewS3(ctx, s3opts)
}

// The schemes of a store URL.
const (
	SchemeS3   = "s3"
	SchemeFile = "file"
)

// URL is a store URL read and checked: the store it names, before anything is opened.
type URL struct {
	// Scheme is SchemeS3 or SchemeFile.
	Scheme string
	// Dir is a file URL's absolute directory.
	Dir string
	// S3 is an s3 URL's bucket, prefix and query parameters (no credentials, no logger).
	S3 S3Options
}

// ParseURL reads and checks a store URL without opening it: no network, no disk. It is the
// one definition of a valid store URL: Open takes exactly what it accepts, and a job spec is
// validated with it, so a spec that validates does not fail on the node for its URL.
func ParseURL(rawURL string) (URL, error) {
	u, err := url.Parse(rawURL)
	if err != nil {
		return URL{}, fmt.Errorf("parsing store URL %q: %w", rawURL, err)
	}
	switch u.Scheme {
	case SchemeS3:
		opts, err := s3OptionsFromURL(u)
		if err != nil {
			return URL{}, fmt.Errorf("store URL %q: %w", rawURL, err)
		}
		return URL{Scheme: SchemeS3, S3: opts}, nil
	case SchemeFile:
		if u.Host != "" && u.Host != "localhost" {
			return URL{}, fmt.Errorf("store URL %q: file URLs take no host (%q); write file:///abs/dir", rawURL, u.Host)
		}
		if u.RawQuery != "" {
			return URL{}, fmt.Errorf("store URL %q: file URLs take no query (%q)", rawURL, u.RawQuery)
		}
		if u.Path == "" || !filepath.IsAbs(u.Path) {
			return URL{}, fmt.Errorf("store URL %q: the path must be absolute, as in file:///var/lib/ckpt", rawURL)
		}
		return URL{Scheme: SchemeFile, Dir: u.Path}, nil
	case "":
		return URL{}, fmt.Errorf("store URL %q has no scheme: want s3://bucket/prefix or file:///abs/dir", rawURL)
	default:
		return URL{}, fmt.Errorf("store URL %q: unsupported scheme %q (want s3 or file)", rawURL, u.Scheme)
	}
}

// OpenOption adjusts what Open makes.
type OpenOption func(*openOptions)

type openOptions struct {
	logger zerolog.Logger
}

// WithLogger gives the store a logger for what it does on its own (resuming an upload,
// aborting a stale one); the default logs nothing.
func WithLogger(log zerolog.Logger) OpenOption { return func(o *openOptions) { o.logger = log } }

// s3OptionsFromURL reads bucket, prefix and the query parameters of an s3:// URL.
func s3OptionsFromURL(u *url.URL) (S3Options, error) {
	var opts S3Options
	if u.User != nil {
		return opts, fmt.Errorf("credentials do not belong in the URL; use AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY")
	}
	if u.Host == "" {
		return opts, fmt.Errorf("missing bucket name: want s3://bucket/prefix")
	}
	opts.Bucket = u.Host
	opts.Prefix = strings.Trim(u.Path, "/")
	var unknown []string
	query := u.Query()
	//workflowcheck:ignore the keys are sorted
	for _, name := range slices.Sorted(maps.Keys(query)) { // sorted: the same URL, the same error
		vals := query[name]
		v := vals[len(vals)-1]
		switch name {
		case "endpoint":
			e, err := url.Parse(v)
			if err != nil || (e.Scheme != "http" && e.Scheme != "https") || e.Host == "" {
				return opts, fmt.Errorf("endpoint %q must be an http:// or https:// URL with a host", v)
			}
			opts.Endpoint = v
		case "region":
			opts.Region = v
		case "path_style":
			b, err := strconv.ParseBool(v)
			if err != nil {
				return opts, fmt.Errorf("path_style %q must be true or false", v)
			}
			opts.VirtualHostStyle = !b
		case "part_size":
			n, err := ParseSize(v)
			if err != nil {
				return opts, fmt.Errorf("part_size: %w", err)
			}
			if n != 0 && n < MinPartSize { // 0 takes the default
				return opts, fmt.Errorf("part_size %s is below the S3 minimum of %d bytes", v, MinPartSize)
			}
			opts.PartSize = n
		default:
			unknown = append(unknown, name)
		}
	}
	if len(unknown) > 0 {
		sort.Strings(unknown)
		return opts, fmt.Errorf("unknown query parameter(s) %s (known: endpoint, region, path_style, part_size)", strings.Join(unknown, ", "))
	}
	return opts, nil
}

// ParseSize reads a byte count with an optional binary unit: "8388608", "8MiB", "1GiB", "64M".
func ParseSize(s string) (int64, error) {
	units := []struct {
		suffix string
		mult   int64
	}{{"KiB", 1 << 10}, {"MiB", 1 << 20}, {"GiB", 1 << 30}, {"K", 1 << 10}, {"M", 1 << 20}, {"G", 1 << 30}, {"B", 1}}
	t := strings.TrimSpace(s)
	mult := int64(1)
	for _, u := range units {
		if strings.HasSuffix(t, u.suffix) {
			t, mult = strings.TrimSpace(strings.TrimSuffix(t, u.suffix)), u.mult
			break
		}
	}
	n, err := strconv.ParseInt(t, 10, 64)
	if err != nil || n < 0 {
		return 0, fmt.Errorf("size %q is not a byte count like 8388608 or 64MiB", s)
	}
	return n * mult, nil
}
