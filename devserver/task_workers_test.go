package devserver

import (
	"runtime"
	"strings"
	"testing"

	"github.com/rs/zerolog"
)

// The embedded history service runs one shard on one host: its task schedulers must not keep
// the hundreds of workers a queue that Temporal's defaults give a production host (3 × 512
// transfer/timer/visibility workers, 64 in-memory timer workers, 512 + 128 replication
// pollers), each a goroutine whose stack grows under load and stays grown.
func TestHistoryTaskWorkersSizedForOneHost(t *testing.T) {
	port, err := FreePort("127.0.0.1")
	if err != nil {
		t.Fatal(err)
	}
	srv, err := Start(Options{Port: port, Headless: true, ServerLogLevel: "error",
		Logger: zerolog.New(zerolog.NewTestWriter(t)).Level(zerolog.ErrorLevel)})
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Stop()

	buf := make([]byte, 64<<20)
	dump := string(buf[:runtime.Stack(buf, true)])
	fifo := strings.Count(dump, "common/tasks.(*FIFOScheduler[...]).processTask")
	seq := strings.Count(dump, "common/tasks.(*SequentialScheduler[...]).pollTaskQueue")
	// transfer, timer and visibility at DefaultTaskWorkers each, the in-memory timers' quarter.
	wantFIFO := 3*DefaultTaskWorkers + DefaultTaskWorkers/4
	if fifo != wantFIFO || seq != 2 {
		t.Errorf("history task workers: %d FIFO scheduler workers, %d sequential scheduler pollers; want %d and 2",
			fifo, seq, wantFIFO)
	}
}
