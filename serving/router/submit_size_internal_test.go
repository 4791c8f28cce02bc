package router

import (
	"bytes"
	"encoding/json"
	"slices"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/schooner-ml/schooner/internal/frame"
	"github.com/schooner-ml/schooner/serving"
)

// A submit carries its prompt's token ids in the frame's header: the longest prompt a spec
// allows (max_context at its bound, every id as long as JSON makes it) must fit. At the
// earlier 64 KiB header bound a prompt of about 10,000 tokens could not reach a worker.
func TestASubmitOfTheLongestPromptFitsAFrame(t *testing.T) {
	prompt := slices.Repeat([]int{999_999}, serving.MaxContext)
	var buf bytes.Buffer
	require.NoError(t, frame.Write(&buf, submitMsg{Op: "submit", Request: "r", Prompt: prompt, MaxTokens: 1}, nil))
	h, _, err := frame.NewReader(&buf, 0).Next()
	require.NoError(t, err)
	var got submitMsg
	require.NoError(t, json.Unmarshal(h.Raw, &got))
	require.Equal(t, prompt, got.Prompt)
}
