// Command check decodes vload's Kubernetes manifests into the official API types
// (k8s.io/api) with strict decoding: a field the API does not have, a misspelt one, a
// value of the wrong type or a duplicated key is an error naming the file and the field.
// It complements the Rust typed parse in crates/cli/tests/deploy.rs, which checks what
// vload's own flags and the Indexed Job need; this one checks what Kubernetes would accept.
//
//	go run . ../job.yaml ../job-upload.yaml ../results-pvc.yaml
//
// Each file may hold several documents separated by "---". Exit 0 when every document
// decodes, 1 otherwise, with one line per problem on stderr.
package main

import (
	"bytes"
	"fmt"
	"os"
	"regexp"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/yaml"
)

// A document separator line, as kubectl splits files.
var separator = regexp.MustCompile(`(?m)^---\s*$`)

// The kinds vload ships, each with the type it must decode into.
func target(gvk schema.GroupVersionKind) (interface{}, bool) {
	switch gvk {
	case batchv1.SchemeGroupVersion.WithKind("Job"):
		return &batchv1.Job{}, true
	case corev1.SchemeGroupVersion.WithKind("PersistentVolumeClaim"):
		return &corev1.PersistentVolumeClaim{}, true
	case corev1.SchemeGroupVersion.WithKind("ConfigMap"):
		return &corev1.ConfigMap{}, true
	}
	return nil, false
}

func check(path string) []string {
	data, err := os.ReadFile(path)
	if err != nil {
		return []string{fmt.Sprintf("%s: %v", path, err)}
	}
	var problems []string
	documents := 0
	for i, doc := range separator.Split(string(data), -1) {
		if len(bytes.TrimSpace([]byte(doc))) == 0 {
			continue
		}
		documents++
		var meta struct {
			APIVersion string `json:"apiVersion"`
			Kind       string `json:"kind"`
		}
		if err := yaml.Unmarshal([]byte(doc), &meta); err != nil {
			problems = append(problems, fmt.Sprintf("%s: document %d: %v", path, i+1, err))
			continue
		}
		gv, err := schema.ParseGroupVersion(meta.APIVersion)
		if err != nil {
			problems = append(problems, fmt.Sprintf("%s: document %d: apiVersion %q: %v", path, i+1, meta.APIVersion, err))
			continue
		}
		into, ok := target(gv.WithKind(meta.Kind))
		if !ok {
			problems = append(problems, fmt.Sprintf("%s: document %d: %s %s is not a kind this check knows", path, i+1, meta.APIVersion, meta.Kind))
			continue
		}
		// Strict: unknown fields and duplicate keys are errors, as `kubectl apply
		// --validate=strict` makes them.
		if err := yaml.UnmarshalStrict([]byte(doc), into); err != nil {
			problems = append(problems, fmt.Sprintf("%s: document %d (%s): %v", path, i+1, meta.Kind, err))
		}
	}
	if documents == 0 {
		problems = append(problems, fmt.Sprintf("%s: no document", path))
	}
	return problems
}

func main() {
	if len(os.Args) < 2 {
		fmt.Fprintln(os.Stderr, "usage: check MANIFEST.yaml...")
		os.Exit(2)
	}
	failed := false
	for _, path := range os.Args[1:] {
		for _, problem := range check(path) {
			fmt.Fprintln(os.Stderr, problem)
			failed = true
		}
	}
	if failed {
		os.Exit(1)
	}
	fmt.Printf("%d manifests decode strictly into k8s.io/api types\n", len(os.Args)-1)
}
