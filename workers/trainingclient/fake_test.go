package trainingclient

import (
	"context"
	"encoding/json"
	"errors"
	"sync"

	commonpb "go.temporal.io/api/common/v1"
	enumspb "go.temporal.io/api/enums/v1"
	workflowpb "go.temporal.io/api/workflow/v1"
	"go.temporal.io/api/workflowservice/v1"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/converter"

	"github.com/schooner-ml/schooner/training"
)

// fakeTemporal stands in for the Temporal client: the job's workflow states in turn (the
// last one repeats), its status query answers in turn, its result, and what was started.
// Methods it does not override panic (the embedded nil interface).
type fakeTemporal struct {
	client.Client
	mu        sync.Mutex
	states    []enumspb.WorkflowExecutionStatus
	describes int
	answers   []training.JobStatus
	queries   int
	queryErr  error
	result    training.JobStatus
	resultErr error
	started   []client.StartWorkflowOptions
	inputs    []training.JobInput
	cancelled []string
	pages     []*workflowservice.ListWorkflowExecutionsResponse
	listed    []string
	// memo, when set, is the status the job published in its memo.
	memo *training.JobStatus
}

func (f *fakeTemporal) ExecuteWorkflow(_ context.Context, o client.StartWorkflowOptions, wf any, args ...any) (client.WorkflowRun, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if wf != training.WorkflowTrainingJob {
		return nil, errors.New("not a TrainingJob")
	}
	f.started = append(f.started, o)
	f.inputs = append(f.inputs, args[0].(training.JobInput))
	return nil, nil
}

func (f *fakeTemporal) DescribeWorkflowExecution(context.Context, string, string) (*workflowservice.DescribeWorkflowExecutionResponse, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if len(f.states) == 0 {
		return nil, errors.New("workflow not found")
	}
	s := f.states[min(f.describes, len(f.states)-1)]
	f.describes++
	info := &workflowpb.WorkflowExecutionInfo{Status: s}
	if f.memo != nil {
		p, err := converter.GetDefaultDataConverter().ToPayload(*f.memo)
		if err != nil {
			return nil, err
		}
		info.Memo = &commonpb.Memo{Fields: map[string]*commonpb.Payload{training.MemoStatus: p}}
	}
	return &workflowservice.DescribeWorkflowExecutionResponse{WorkflowExecutionInfo: info}, nil
}

func (f *fakeTemporal) QueryWorkflow(_ context.Context, _, _, queryType string, _ ...any) (converter.EncodedValue, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if queryType != training.QueryStatus {
		return nil, errors.New("unknown query " + queryType)
	}
	if f.queryErr != nil || len(f.answers) == 0 {
		return nil, f.queryErr
	}
	st := f.answers[min(f.queries, len(f.answers)-1)]
	f.queries++
	return jsonValue{st}, nil
}

func (f *fakeTemporal) GetWorkflow(context.Context, string, string) client.WorkflowRun {
	return fakeRun{f: f}
}

func (f *fakeTemporal) CancelWorkflow(_ context.Context, id, _ string) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.cancelled = append(f.cancelled, id)
	return nil
}

func (f *fakeTemporal) ListWorkflow(_ context.Context, r *workflowservice.ListWorkflowExecutionsRequest) (*workflowservice.ListWorkflowExecutionsResponse, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.listed = append(f.listed, r.GetQuery())
	if len(f.pages) == 0 {
		return &workflowservice.ListWorkflowExecutionsResponse{}, nil
	}
	p := f.pages[0]
	f.pages = f.pages[1:]
	return p, nil
}

// fakeRun is the job's run: its result.
type fakeRun struct {
	client.WorkflowRun
	f *fakeTemporal
}

func (r fakeRun) Get(_ context.Context, v any) error {
	if r.f.resultErr != nil {
		return r.f.resultErr
	}
	return jsonValue{r.f.result}.Get(v)
}

// jsonValue is a query answer as the default data converter carries it: JSON.
type jsonValue struct{ v any }

func (j jsonValue) HasValue() bool { return true }
func (j jsonValue) Get(ptr any) error {
	b, err := json.Marshal(j.v)
	if err != nil {
		return err
	}
	return json.Unmarshal(b, ptr)
}
