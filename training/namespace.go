package training

import (
	"fmt"
	"net/url"
	"path"
	"regexp"
)

// safeSegment is what a job id or run id must look like to name a folder or an object prefix:
// no separators, no "..", nothing a shell or a URL would read differently.
var safeSegment = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._-]{0,199}$`)

// JobStore is the job's own checkpoint namespace under the spec's store:
// <store>/jobs/<job id>/<run identity>. The run identity is the first run id of the job's
// workflow (kept across continue-as-new), so a job resubmitted under the same id starts
// empty instead of adopting its predecessor's checkpoints, and two jobs never share steps
// whatever store URL their specs name. Query parameters of the store (s3 endpoint, region)
// are kept.
func JobStore(storeURL, jobID, run string) (string, error) {
	for _, s := range []struct{ what, v string }{{"job id", jobID}, {"run id", run}} {
		if !safeSegment.MatchString(s.v) || s.v == "." || s.v == ".." {
			return "", fmt.Errorf("%s %q cannot name a checkpoint namespace: use letters, digits, '.', '_' and '-' (at most 200)", s.what, s.v)
		}
	}
	u, err := url.Parse(storeURL)
	if err != nil {
		return "", fmt.Errorf("checkpoint store %q: %w", storeURL, err)
	}
	u.Path = path.Join("/", u.Path, "jobs", jobID, run)
	if u.Scheme == "s3" {
		u.Path = path.Join(u.Path) // s3://bucket/prefix: the prefix has no trailing slash
	}
	return u.String(), nil
}
