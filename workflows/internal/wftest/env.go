package wftest

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/converter"
	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/testsuite"
)

// NewEnv is a fresh test environment with each stand-in of standIns registered under its
// activity name (the tests mock them).
func NewEnv(standIns map[string]any) *testsuite.TestWorkflowEnvironment {
	var s testsuite.WorkflowTestSuite
	env := s.NewTestWorkflowEnvironment()
	for name, fn := range standIns {
		env.RegisterActivityWithOptions(fn, activity.RegisterOptions{Name: name})
	}
	return env
}

// StandIn is a stand-in of an activity that takes no argument and returns an R, for NewEnv.
func StandIn[R any]() func(context.Context) (R, error) {
	return func(context.Context) (R, error) { var zero R; return zero, nil }
}

// StandIn1 is a stand-in of an activity that takes an A and returns an R, for NewEnv.
func StandIn1[A, R any]() func(context.Context, A) (R, error) {
	return func(context.Context, A) (R, error) { var zero R; return zero, nil }
}

// Result is the result of the workflow env ran; the test ends unless it completed without
// an error.
func Result[T any](t testing.TB, env *testsuite.TestWorkflowEnvironment) T {
	t.Helper()
	require.True(t, env.IsWorkflowCompleted())
	require.NoError(t, env.GetWorkflowError())
	var out T
	require.NoError(t, env.GetWorkflowResult(&out))
	return out
}

// Failure is the application error the workflow env ran failed with, and the workflow's
// error itself; the test ends (saying msgAndArgs) unless the workflow completed with an
// application error.
func Failure(t testing.TB, env *testsuite.TestWorkflowEnvironment, msgAndArgs ...any) (*temporal.ApplicationError, error) {
	t.Helper()
	require.True(t, env.IsWorkflowCompleted())
	err := env.GetWorkflowError()
	require.Error(t, err, msgAndArgs...)
	var app *temporal.ApplicationError
	require.ErrorAs(t, err, &app)
	return app, err
}

// BadSpec checks that the workflow env ran refused its spec at once: a non-retryable
// application error of errType whose message names each of fields. It returns the problems
// the error carries in its details.
func BadSpec[P any](t testing.TB, env *testsuite.TestWorkflowEnvironment, errType string, fields ...string) []P {
	t.Helper()
	app, err := Failure(t, env)
	assert.Equal(t, errType, app.Type())
	assert.True(t, app.NonRetryable(), "a bad spec is final")
	for _, f := range fields {
		assert.Contains(t, err.Error(), f)
	}
	var problems []P
	require.NoError(t, app.Details(&problems))
	return problems
}

// Query is the workflow's answer to the query name.
func Query[T any](t testing.TB, env *testsuite.TestWorkflowEnvironment, name string, args ...any) T {
	t.Helper()
	v, err := env.QueryWorkflow(name, args...)
	require.NoError(t, err)
	var out T
	require.NoError(t, v.Get(&out))
	return out
}

// OnStarted calls started with the argument of every activity called name as it starts (the
// environment has one such listener: this replaces any other).
func OnStarted[T any](t testing.TB, env *testsuite.TestWorkflowEnvironment, name string, started func(T)) {
	env.SetOnActivityStartedListener(func(info *activity.Info, _ context.Context, args converter.EncodedValues) {
		if info.ActivityType.Name != name {
			return
		}
		var a T
		require.NoError(t, args.Get(&a))
		started(a)
	})
}
