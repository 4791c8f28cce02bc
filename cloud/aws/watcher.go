package aws

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"time"

	"github.com/aws/aws-sdk-go-v2/feature/ec2/imds"
	"github.com/aws/smithy-go/middleware"
	smithyhttp "github.com/aws/smithy-go/transport/http"

	"github.com/schooner-ml/schooner/cloud"
)

// WatcherOptions configure a Watcher; the zero value polls the real metadata service.
type WatcherOptions struct {
	// Endpoint overrides the metadata service address (default http://169.254.169.254). A path
	// in it is kept: the simulator serves each instance under http://host:port/imds/<id>.
	Endpoint string
	// Now is the clock stamped on notices (Interruption.At); default time.Now.
	Now func() time.Time
}

// Watcher is the cloud.InterruptionWatcher of an EC2 instance: it reads
// meta-data/spot/instance-action from the instance metadata service (IMDSv2), where EC2 puts
// the termination time two minutes before it reclaims a spot instance.
type Watcher struct {
	client *imds.Client
	now    func() time.Time

	mu   sync.Mutex
	id   string
	zone string
}

var _ cloud.InterruptionWatcher = (*Watcher)(nil)

// NewWatcher returns a watcher of the metadata service at opts.Endpoint.
func NewWatcher(opts WatcherOptions) (*Watcher, error) {
	// Enabled whatever AWS_EC2_METADATA_DISABLED says: that variable keeps the credential
	// chain off the metadata service, while reading it is this watcher's whole job.
	o := imds.Options{ClientEnableState: imds.ClientEnabled}
	if opts.Endpoint != "" {
		u, err := url.Parse(opts.Endpoint)
		if err != nil || u.Scheme == "" || u.Host == "" {
			return nil, fmt.Errorf("parsing metadata endpoint %q: want scheme://host[:port][/path]", opts.Endpoint)
		}
		o.Endpoint = opts.Endpoint
		if prefix := strings.TrimSuffix(u.Path, "/"); prefix != "" {
			o.APIOptions = append(o.APIOptions, keepPathPrefix(prefix))
		}
	}
	now := opts.Now
	if now == nil {
		now = time.Now
	}
	return &Watcher{client: imds.New(o), now: now}, nil
}

// instanceAction is the document EC2 serves at spot/instance-action.
type instanceAction struct {
	Action string    `json:"action"` // terminate, stop or hibernate
	Time   time.Time `json:"time"`
}

// Poll returns the pending spot notice, or nil while there is none (the path is 404 until
// EC2 decides to reclaim the instance).
func (w *Watcher) Poll(ctx context.Context) (*cloud.Interruption, error) {
	body, err := w.get(ctx, "spot/instance-action")
	if isNotFound(err) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("reading spot instance-action: %w", err)
	}
	var act instanceAction
	if err := json.Unmarshal([]byte(body), &act); err != nil {
		return nil, fmt.Errorf("decoding spot instance-action %q: %w", body, err)
	}
	id, zone := w.identify(ctx)
	return &cloud.Interruption{Kind: cloud.Notice, InstanceID: id, Zone: zone, Deadline: act.Time, At: w.now()}, nil
}

// identify reads the instance id and zone for the notices, until it has them once. A failure
// leaves them empty for this notice: the node agent knows its instance anyway, and the notice
// matters more.
func (w *Watcher) identify(ctx context.Context) (id, zone string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.id == "" {
		if id, err := w.get(ctx, "instance-id"); err == nil {
			w.id = id
			w.zone, _ = w.get(ctx, "placement/availability-zone")
		}
	}
	return w.id, w.zone
}

func (w *Watcher) get(ctx context.Context, path string) (string, error) {
	out, err := w.client.GetMetadata(ctx, &imds.GetMetadataInput{Path: path})
	if err != nil {
		return "", err
	}
	defer out.Content.Close()
	b, err := io.ReadAll(out.Content)
	return strings.TrimSpace(string(b)), err
}

func isNotFound(err error) bool {
	var re *smithyhttp.ResponseError
	return errors.As(err, &re) && re.HTTPStatusCode() == http.StatusNotFound
}

// keepPathPrefix puts the endpoint's path back in front of the request path. The imds client
// sets the URL from the endpoint and then overwrites its path with /latest/..., so a path in
// the endpoint would be lost without this.
func keepPathPrefix(prefix string) func(*middleware.Stack) error {
	return func(stack *middleware.Stack) error {
		return stack.Serialize.Insert(middleware.SerializeMiddlewareFunc("SchoonerIMDSPathPrefix",
			func(ctx context.Context, in middleware.SerializeInput, next middleware.SerializeHandler) (middleware.SerializeOutput, middleware.Metadata, error) {
				if req, ok := in.Request.(*smithyhttp.Request); ok && !strings.HasPrefix(req.URL.Path, prefix+"/") {
					req.URL.Path = prefix + req.URL.Path
				}
				return next.HandleSerialize(ctx, in)
			}), "OperationSerializer", middleware.After)
	}
}
