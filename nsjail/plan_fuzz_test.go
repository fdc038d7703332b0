//go:build linux && cgo

package nsjail

import (
	"testing"

	"agentjail/nsjail/boot"
	"agentjail/nsjail/internal/wire"
	"agentjail/seccomp"
)

// planSeed is one input of the plan decoder: a plan and the number of fds
// its message brought.
type planSeed struct {
	plan []byte
	nfds int
}

// planSeeds are real plans (a jail's build plan, a run's request plan) and
// small edge cases: FuzzPlanDryPass's seeds and the sanitized C harness's
// (TestPlanSeeds, plan_fuzz_asan in scripts/ci/checks).
func planSeeds(t testing.TB) []planSeed {
	r := &Runner{RootDir: DefaultRootDir, Seccomp: seccomp.DefaultProgramBytes()}
	build := buildPlan(r.buildConfig(jailBase{binds: binds(&Spec{}), shared: []File{{Path: "boot.py", Content: []byte("pass")}}}, DefaultLimits().TmpBytes))
	s := &Spec{Program: []byte("print(1)"), Limits: DefaultLimits(), Report: true, Collect: []string{"*"},
		Files: []File{{Path: "data/in.csv", Content: []byte("a,b\n1,2\n")}}, Env: map[string]string{"A": "1"}}
	request := requestPlan(requestConfigFor(s, codeFiles(s)), DefaultLimits().TmpBytes/2)
	// A daemon's jail attaches its root tree (Runner.rootTree), sent with
	// the plan.
	treeCfg := r.buildConfig(jailBase{binds: binds(&Spec{})}, DefaultLimits().TmpBytes)
	treeCfg.RootTree = true
	tree := buildPlan(treeCfg)
	if !boot.PlanCheck(build, 0) || !boot.PlanCheck(request, 4) || !boot.PlanCheck(tree, 1) {
		t.Fatal("a plan this package builds is refused")
	}
	return []planSeed{
		{build, 0},
		{request, 4},
		{tree, 1},
		{[]byte{}, 0},
		{(&wire.Plan{}).Op(wire.OpIfExists, "x").Bytes(), 0}, // a condition without its path
	}
}

// FuzzPlanDryPass feeds the init stage's plan decoder (init_plan_linux.c's dry
// pass, through planCheck) with mutations of real plans: it must never
// crash, hang or read past the plan, whatever the bytes, and it must take
// every plan this package builds.
func FuzzPlanDryPass(f *testing.F) {
	for _, s := range planSeeds(f) {
		f.Add(s.plan, s.nfds)
	}
	f.Fuzz(func(t *testing.T, plan []byte, nfds int) {
		boot.PlanCheck(plan, nfds%(maxMsgFds+1))
	})
}
