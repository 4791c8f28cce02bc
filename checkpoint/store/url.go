package store

import (
	"context"
	"fmt"
	"net/url"
	"path/filepath"
	"sort"
	"strconv"
	"strings"

	"github.com/rs/zerolog"
)

// Open makes the store a URL names, so every tool and config file names stores the same way:
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
	u, err := url.Parse(rawURL)
	if err != nil {
		return nil, fmt.Errorf("parsing store URL %q: %w", rawURL, err)
	}
	switch u.Scheme {
	case "s3":
		opts, err := s3OptionsFromURL(u)
		if err != nil {
			return nil, fmt.Errorf("store URL %q: %w", rawURL, err)
		}
		opts.Logger = o.logger
		return NewS3(ctx, opts)
	case "file":
		if u.Host != "" && u.Host != "localhost" {
			return nil, fmt.Errorf("store URL %q: file URLs take no host (%q); write file:///abs/dir", rawURL, u.Host)
		}
		if u.RawQuery != "" {
			return nil, fmt.Errorf("store URL %q: file URLs take no query (%q)", rawURL, u.RawQuery)
		}
		if u.Path == "" || !filepath.IsAbs(u.Path) {
			return nil, fmt.Errorf("store URL %q: the path must be absolute, as in file:///var/lib/ckpt", rawURL)
		}
		return NewDir(u.Path)
	case "":
		return nil, fmt.Errorf("store URL %q has no scheme: want s3://bucket/prefix or file:///abs/dir", rawURL)
	default:
		return nil, fmt.Errorf("store URL %q: unsupported scheme %q (want s3 or file)", rawURL, u.Scheme)
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
	for name, vals := range u.Query() {
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
