package command

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/rs/zerolog"
	"github.com/stretchr/testify/require"

	"github.com/schooner-ml/schooner/checkpoint"
	"github.com/schooner-ml/schooner/internal/wait"
	"github.com/schooner-ml/schooner/training"
)

func testAssignment() training.Assignment {
	return training.Assignment{
		JobID: "train-x-1", Epoch: 3, InstanceID: "i-1", Rank: 5, Stage: 2, Replica: 1,
		Layers: checkpoint.StageLayers{First: 8, End: 12},
		Plan:   checkpoint.PlanInfo{World: 3, PP: 3, DP: 2, TP: 4},
		Seed:   9, RestoreStep: 40, Iterations: 100, CheckpointEvery: 10, Saver: false,
		Trainer: training.Trainer{Kind: training.TrainerCommand, Env: map[string]string{"USER_VAR": "u", "SCHOONER_RANK": "99"}},
	}
}

func TestParseProgress(t *testing.T) {
	p, ok, err := ParseProgress(`SCHOONER_PROGRESS {"iteration":12,"last_checkpoint":10}`)
	require.NoError(t, err)
	require.True(t, ok)
	require.Equal(t, int64(12), p.Iteration)
	require.Equal(t, int64(10), *p.LastCheckpoint)

	p, ok, err = ParseProgress("SCHOONER_PROGRESS {\"iteration\":3}\r\n")
	require.NoError(t, err)
	require.True(t, ok)
	require.Nil(t, p.LastCheckpoint)

	_, ok, err = ParseProgress("epoch 1 loss 2.3")
	require.NoError(t, err)
	require.False(t, ok)

	_, _, err = ParseProgress(`SCHOONER_PROGRESS {"iter":3}`)
	require.ErrorContains(t, err, "unknown field")
	_, _, err = ParseProgress(`SCHOONER_PROGRESS {"iteration":-1}`)
	require.ErrorContains(t, err, "negative")
}

// TestEnvironmentAndProgress runs a shell program that dumps its environment and prints
// progress lines, and checks both directions of the protocol.
func TestEnvironmentAndProgress(t *testing.T) {
	dir := t.TempDir()
	envFile := filepath.Join(dir, "env")
	script := `env > "$ENV_OUT"
echo "hello from the trainer"
echo 'SCHOONER_PROGRESS {"iteration":41}'
echo 'SCHOONER_PROGRESS {"iteration":50,"last_checkpoint":50}'
echo 'SCHOONER_PROGRESS {"bad":1}'
printf 'SCHOONER_PROGRESS {"iteration":100,"last_checkpoint":100}'`
	a := testAssignment()
	a.Trainer.Env["ENV_OUT"] = envFile
	var mu sync.Mutex
	var got []training.Progress
	res, err := Run(context.Background(), Options{
		Assignment: a, Command: []string{"sh", "-c", script}, Socket: "/tmp/agent.sock",
		Batch: Batch{Global: 64, Micro: 2}, Logger: zerolog.New(zerolog.NewTestWriter(t)),
		OnProgress: func(p training.Progress) { mu.Lock(); got = append(got, p); mu.Unlock() },
	})
	require.NoError(t, err)
	require.Equal(t, training.TrainerResult{Rank: 5, FinalIteration: 100, LastCheckpoint: 100}, res)
	require.Len(t, got, 3)
	require.Equal(t, training.Progress{Epoch: 3, Rank: 5, InstanceID: "i-1", Iteration: 41, LastCheckpoint: -1}, got[0])
	require.Equal(t, int64(50), got[1].LastCheckpoint)

	b, err := os.ReadFile(envFile)
	require.NoError(t, err)
	env := map[string]string{}
	for _, line := range strings.Split(string(b), "\n") {
		if k, v, ok := strings.Cut(line, "="); ok {
			env[k] = v
		}
	}
	want := map[string]string{
		"SCHOONER_JOB_ID": "train-x-1", "SCHOONER_EPOCH": "3", "SCHOONER_RANK": "5", "SCHOONER_WORLD_SIZE": "6",
		"SCHOONER_STAGE": "2", "SCHOONER_REPLICA": "1", "SCHOONER_DP": "2", "SCHOONER_PP": "3", "SCHOONER_TP": "4",
		"SCHOONER_LAYERS_FIRST": "8", "SCHOONER_LAYERS_END": "12", "SCHOONER_MICRO_BATCH": "2",
		"SCHOONER_GLOBAL_BATCH": "64", "SCHOONER_ITERATIONS": "100", "SCHOONER_RESTORE_STEP": "40",
		"SCHOONER_CHECKPOINT_EVERY": "10", "SCHOONER_SAVER": "0", "SCHOONER_CKPT_SOCKET": "/tmp/agent.sock",
		"USER_VAR": "u",
	}
	for k, v := range want {
		require.Equal(t, v, env[k], k)
	}
	var plan training.Assignment
	require.NoError(t, json.Unmarshal([]byte(env["SCHOONER_PLAN_JSON"]), &plan))
	require.Equal(t, a.Layers, plan.Layers)
	require.Equal(t, a.Plan.DP, plan.Plan.DP)
}

func TestFailingProgramIsAnError(t *testing.T) {
	_, err := Run(context.Background(), Options{Assignment: testAssignment(), Command: []string{"sh", "-c", "exit 3"},
		Logger: zerolog.Nop()})
	require.ErrorContains(t, err, "exit status 3")
	_, err = Run(context.Background(), Options{Assignment: testAssignment(), Logger: zerolog.Nop()})
	require.ErrorContains(t, err, "no command")
}

// TestCancelKillsTheProcessGroup cancels a program that ignores SIGTERM and has a child: both
// must be gone once Run returns, after the grace period's SIGKILL.
func TestCancelKillsTheProcessGroup(t *testing.T) {
	for _, ignoreTerm := range []bool{false, true} {
		t.Run("ignore-term="+strconv.FormatBool(ignoreTerm), func(t *testing.T) {
			pidFile := filepath.Join(t.TempDir(), "pid")
			script := `sleep 60 & echo $! > "$PID_OUT"; echo 'SCHOONER_PROGRESS {"iteration":1}'; wait`
			if ignoreTerm {
				script = "trap '' TERM; " + script
			}
			a := testAssignment()
			a.Trainer.Env = map[string]string{"PID_OUT": pidFile}
			ctx, cancel := context.WithCancel(context.Background())
			started := make(chan struct{}, 1)
			done := make(chan error, 1)
			go func() {
				_, err := Run(ctx, Options{Assignment: a, Command: []string{"sh", "-c", script}, Grace: 200 * time.Millisecond,
					Logger: zerolog.Nop(), OnProgress: func(training.Progress) { started <- struct{}{} }})
				done <- err
			}()
			wait.Recv(t, started, 10*time.Second, "the program to report progress")
			cancel()
			require.ErrorIs(t, wait.Recv(t, done, 10*time.Second, "Run to return after cancel"), context.Canceled)
			b, err := os.ReadFile(pidFile)
			require.NoError(t, err)
			child, err := strconv.Atoi(strings.TrimSpace(string(b)))
			require.NoError(t, err)
			deadline := time.Now().Add(5 * time.Second)
			for syscall.Kill(child, 0) == nil {
				if time.Now().After(deadline) {
					t.Fatalf("child %d of the trainer program survived the cancel", child)
				}
				time.Sleep(10 * time.Millisecond)
			}
		})
	}
}
