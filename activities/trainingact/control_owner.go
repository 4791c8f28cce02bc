package trainingact

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/url"
	"strings"

	"go.temporal.io/sdk/temporal"

	"github.com/schooner-ml/schooner/checkpoint"
	"github.com/schooner-ml/schooner/checkpoint/store"
	"github.com/schooner-ml/schooner/training"
)

// ownerKey is the object that names the job a checkpoint namespace belongs to.
const ownerKey = "OWNER.json"

// namespaceOwner is what the owner object says, and what a namespace URL's path
// (.../jobs/<job id>/<run>) says it must say.
type namespaceOwner struct {
	JobID string `json:"job_id"`
	Run   string `json:"run"`
}

// ownerOf reads the owner a job namespace URL implies; ok is false for a store URL that is
// not a job namespace (jobs recorded before namespaces existed).
func ownerOf(storeURL string) (namespaceOwner, bool) {
	u, err := url.Parse(storeURL)
	if err != nil {
		return namespaceOwner{}, false
	}
	parts := strings.Split(strings.Trim(u.Path, "/"), "/")
	if n := len(parts); n >= 3 && parts[n-3] == "jobs" {
		return namespaceOwner{JobID: parts[n-2], Run: parts[n-1]}, true
	}
	return namespaceOwner{}, false
}

// claim makes sure the job namespace belongs to the job whose URL it is: the first claim of
// an empty namespace writes the owner object; a namespace whose owner object names another
// job or run, or that holds steps but no owner, is refused for good, so a job never restores
// or continues from checkpoints it did not write.
func claim(ctx context.Context, r *checkpoint.Remote, storeURL string, steps []int64) error {
	want, ok := ownerOf(storeURL)
	if !ok {
		return nil
	}
	rc, err := r.Store.Get(ctx, ownerKey)
	switch {
	case errors.Is(err, store.ErrNotFound):
		if len(steps) > 0 {
			return foreign(storeURL, fmt.Sprintf("it holds steps %v but no owner record", steps))
		}
		b, _ := json.Marshal(want)
		if err := r.Store.Put(ctx, ownerKey, bytes.NewReader(b), int64(len(b)), checkpoint.CRC32C(b)); err != nil {
			return fmt.Errorf("claiming checkpoint namespace %s: %w", storeURL, err)
		}
		return nil
	case err != nil:
		return fmt.Errorf("reading the owner of %s: %w", storeURL, err)
	}
	defer rc.Close()
	var got namespaceOwner
	b, err := io.ReadAll(io.LimitReader(rc, 4096))
	if err == nil {
		err = json.Unmarshal(b, &got)
	}
	if err != nil {
		return foreign(storeURL, fmt.Sprintf("its owner record is unreadable (%v)", err))
	}
	if got != want {
		return foreign(storeURL, fmt.Sprintf("it belongs to job %s run %s", got.JobID, got.Run))
	}
	return nil
}

// foreign is the final error of a namespace that is not the job's.
func foreign(storeURL, why string) error {
	msg := fmt.Sprintf("checkpoint namespace %s is not this job's: %s", storeURL, why)
	return temporal.NewNonRetryableApplicationError(msg, training.ErrTypeForeignCheckpoints, nil)
}
