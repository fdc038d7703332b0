//go:build linux && cgo

package nsjail

import (
	"testing"

	"agentjail/nsjail/boot"
	"agentjail/seccomp"
)

// FuzzPlanDryPass feeds the init stage's plan decoder (init_linux.c's dry
// pass, through planCheck) with mutations of real plans: it must never
// crash, hang or read past the plan, whatever the bytes, and it must take
// every plan this package builds.
func FuzzPlanDryPass(f *testing.F) {
	r := &Runner{RootDir: DefaultRootDir, Seccomp: seccomp.DefaultProgramBytes()}
	build := buildPlan(r.buildConfig(jailBase{binds: binds(&Spec{}), shared: []File{{Path: "boot.py", Content: []byte("pass")}}}, DefaultLimits().TmpBytes))
	s := &Spec{Program: []byte("print(1)"), Limits: DefaultLimits(), Report: true, Collect: []string{"*"},
		Files: []File{{Path: "data/in.csv", Content: []byte("a,b\n1,2\n")}}, Env: map[string]string{"A": "1"}}
	request := requestPlan(requestConfigFor(s, codeFiles(s)), DefaultLimits().TmpBytes/2)
	if !boot.PlanCheck(build, 0) || !boot.PlanCheck(request, 4) {
		f.Fatal("a plan this package builds is refused")
	}
	f.Add(build, 0)
	f.Add(request, 4)
	f.Add([]byte{}, 0)
	f.Add([]byte{byte(opIfExists), 1, 0, 0, 0, 'x', 0}, 0)
	f.Fuzz(func(t *testing.T, plan []byte, nfds int) {
		boot.PlanCheck(plan, nfds%(maxMsgFds+1))
	})
}
