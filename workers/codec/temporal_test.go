package codec

import (
	"context"
	"encoding/base64"
	"net/http/httptest"
	"os/exec"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/converter"
	"go.temporal.io/sdk/worker"
	"go.temporal.io/sdk/workflow"

	"github.com/schooner-ml/schooner/devserver"
	"github.com/schooner-ml/schooner/internal/gotool"
)

func echo(ctx workflow.Context, in string) (string, error) { return "done: " + in, nil }

// sealedEcho runs echo on a real Temporal server through a client that seals with a fresh
// key, and returns the server, the keys and the run; the server stops when the test ends.
func sealedEcho(t *testing.T, ctx context.Context) (*devserver.Server, *Keyring, client.WorkflowRun) {
	port, err := devserver.FreePort("127.0.0.1")
	require.NoError(t, err)
	srv, err := devserver.Start(devserver.Options{Port: port, Headless: true})
	require.NoError(t, err)
	t.Cleanup(srv.Stop)
	keys := keyring(t, newKey(t, "k1"))
	sealed, err := client.Dial(client.Options{HostPort: srv.Address(), DataConverter: DataConverter(nil, keys)})
	require.NoError(t, err)
	t.Cleanup(sealed.Close)
	w := worker.New(sealed, "codec-test", worker.Options{})
	w.RegisterWorkflow(echo)
	require.NoError(t, w.Start())
	t.Cleanup(w.Stop)

	run, err := sealed.ExecuteWorkflow(ctx, client.StartWorkflowOptions{ID: "codec-echo", TaskQueue: "codec-test"},
		echo, "s3://secret-bucket/job-7")
	require.NoError(t, err)
	var out string
	require.NoError(t, run.Get(ctx, &out))
	assert.Equal(t, "done: s3://secret-bucket/job-7", out)
	return srv, keys, run
}

// On a real Temporal server: what a client with the key sends is stored sealed; a client
// without it reads ciphertext; the codec opens it.
func TestAHistoryHoldsOnlyCiphertext(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	srv, keys, run := sealedEcho(t, ctx)

	plain, err := client.Dial(client.Options{HostPort: srv.Address()})
	require.NoError(t, err)
	defer plain.Close()
	it := plain.GetWorkflowHistory(ctx, "codec-echo", run.GetRunID(), false, enumspb.HISTORY_EVENT_FILTER_TYPE_ALL_EVENT)
	var input, result []byte
	for it.HasNext() {
		ev, err := it.Next()
		require.NoError(t, err)
		if a := ev.GetWorkflowExecutionStartedEventAttributes(); a != nil {
			p := a.GetInput().GetPayloads()[0]
			assert.Equal(t, Encoding, string(p.Metadata[converter.MetadataEncoding]))
			input = p.Data
			opened, err := (&Codec{Keys: keys}).Decode(a.GetInput().GetPayloads())
			require.NoError(t, err)
			assert.Contains(t, string(opened[0].Data), "secret-bucket")
		}
		if a := ev.GetWorkflowExecutionCompletedEventAttributes(); a != nil {
			result = a.GetResult().GetPayloads()[0].Data
		}
	}
	require.NotNil(t, input)
	require.NotNil(t, result)
	assert.NotContains(t, string(input), "secret-bucket")
	assert.NotContains(t, string(result), "secret-bucket")
	var s string
	assert.Error(t, plain.GetWorkflow(ctx, "codec-echo", run.GetRunID()).Get(ctx, &s), "a client without the key cannot read the result")
}

// The temporal CLI, as users run it: `workflow show` prints ciphertext, and with
// --codec-endpoint pointing at the codec server (Handler) the payloads decoded.
func TestTheTemporalCLIDecodesThroughTheCodecServer(t *testing.T) {
	temporal, err := gotool.TemporalCLI.Binary()
	require.NoError(t, err)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	srv, keys, run := sealedEcho(t, ctx)
	codecServer := httptest.NewServer(Handler(keys, ServerOptions{}))
	defer codecServer.Close()

	show := func(extra ...string) string {
		args := append([]string{"workflow", "show", "--address", srv.Address(), "--workflow-id", "codec-echo",
			"--run-id", run.GetRunID(), "--output", "json"}, extra...)
		out, err := exec.CommandContext(ctx, temporal, args...).CombinedOutput()
		require.NoError(t, err, string(out))
		return string(out)
	}
	// The CLI's JSON prints a payload's data in base64: the input as the SDK wrote it is the
	// JSON string below, under the encoding json/plain.
	plainInput := base64.StdEncoding.EncodeToString([]byte(`"s3://secret-bucket/job-7"`))
	jsonPlain := base64.StdEncoding.EncodeToString([]byte("json/plain"))
	sealed := show()
	assert.Contains(t, sealed, "EVENT_TYPE_WORKFLOW_EXECUTION_COMPLETED", "the history itself is there")
	assert.NotContains(t, sealed, plainInput, "without the codec server the CLI sees ciphertext")
	assert.NotContains(t, sealed, jsonPlain)
	assert.Contains(t, sealed, base64.StdEncoding.EncodeToString([]byte(Encoding)))
	decoded := show("--codec-endpoint", codecServer.URL)
	assert.Contains(t, decoded, plainInput, "through the codec server the CLI shows the payload")
	assert.Contains(t, decoded, jsonPlain)
}
