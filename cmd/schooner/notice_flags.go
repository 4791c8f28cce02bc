package main

import (
	"errors"
	"fmt"

	"github.com/spf13/pflag"

	"github.com/schooner-ml/schooner/cloud"
	"github.com/schooner-ml/schooner/cloud/aws"
	"github.com/schooner-ml/schooner/cloud/gcp"
)

// noticeFlags say where a process on a cloud machine reads that machine's preemption notices:
// the checkpoint agent (`schooner ckpt agent`) and the node agent (`schooner worker node`).
type noticeFlags struct {
	watch        string
	imdsEndpoint string
	gceMetadata  string
}

func (f *noticeFlags) add(fl *pflag.FlagSet) {
	fl.StringVar(&f.watch, "watch", "", "instance metadata to watch for preemption notices: aws, gce or none (default: none, or implied by an endpoint flag)")
	fl.StringVar(&f.imdsEndpoint, "imds-endpoint", "", "AWS instance metadata endpoint (implies --watch aws; default http://169.254.169.254)")
	fl.StringVar(&f.gceMetadata, "gce-metadata", "", "GCE metadata server base URL (implies --watch gce; default http://169.254.169.254)")
}

// watcher builds the preemption watcher the flags ask for, or nil.
func (f noticeFlags) watcher() (cloud.InterruptionWatcher, error) {
	watch := f.watch
	switch {
	case f.imdsEndpoint != "" && f.gceMetadata != "":
		return nil, errors.New("give --imds-endpoint or --gce-metadata, not both")
	case f.imdsEndpoint != "" && watch == "":
		watch = "aws"
	case f.gceMetadata != "" && watch == "":
		watch = "gce"
	}
	switch watch {
	case "", "none":
		return nil, nil
	case "aws":
		return aws.NewWatcher(aws.WatcherOptions{Endpoint: f.imdsEndpoint})
	case "gce", "gcp":
		return gcp.NewWatcher(gcp.WatcherOptions{MetadataURL: f.gceMetadata})
	}
	return nil, fmt.Errorf("unknown --watch %q (want aws, gce or none)", watch)
}
