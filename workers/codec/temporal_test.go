package codec

import (
	"context"
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
)

func echo(ctx workflow.Context, in string) (string, error) { return "done: " + in, nil }

// On a real Temporal server: what a client with the key sends is stored sealed; a client
// without it reads ciphertext; the codec opens it.
func TestAHistoryHoldsOnlyCiphertext(t *testing.T) {
	port, err := devserver.FreePort("127.0.0.1")
	require.NoError(t, err)
	srv, err := devserver.Start(devserver.Options{Port: port, Headless: true})
	require.NoError(t, err)
	defer srv.Stop()
	keys := keyring(t, newKey(t, "k1"))
	sealed, err := client.Dial(client.Options{HostPort: srv.Address(), DataConverter: DataConverter(nil, keys)})
	require.NoError(t, err)
	defer sealed.Close()
	w := worker.New(sealed, "codec-test", worker.Options{})
	w.RegisterWorkflow(echo)
	require.NoError(t, w.Start())
	defer w.Stop()

	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	run, err := sealed.ExecuteWorkflow(ctx, client.StartWorkflowOptions{ID: "codec-echo", TaskQueue: "codec-test"},
		echo, "s3://secret-bucket/job-7")
	require.NoError(t, err)
	var out string
	require.NoError(t, run.Get(ctx, &out))
	assert.Equal(t, "done: s3://secret-bucket/job-7", out)

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
