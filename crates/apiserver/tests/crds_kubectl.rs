//! kubectl on custom resources, with the oldest and the newest kubectl of the machine:
//! `kubectl apply -f` a CustomResourceDefinition (twice: created, then unchanged), `kubectl wait`
//! for it to be established, `kubectl apply` and `kubectl get` of the custom kind (its printer
//! columns), `kubectl get -w` seeing a change, a write its validation rule refuses, a
//! definition whose rule does not type-check refused, one whose rule is too costly refused,
//! and `kubectl explain` reading its schema.

mod common;

use std::path::Path;
use std::process::Stdio;
use std::time::Duration;

use common::server;
use common::tools::{kubectl_bin, kubectl_versions, tempdir};
use tokio::io::{AsyncBufReadExt, BufReader};

const CRD: &str = r#"apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata:
  name: gadgets.demo.example.org
spec:
  group: demo.example.org
  scope: Namespaced
  names: {plural: gadgets, singular: gadget, kind: Gadget, shortNames: [gd]}
  versions:
  - name: v1
    served: true
    storage: true
    subresources: {status: {}}
    additionalPrinterColumns:
    - {name: Replicas, type: integer, jsonPath: .spec.replicas}
    - {name: Mode, type: string, jsonPath: .spec.mode}
    schema:
      openAPIV3Schema:
        type: object
        description: A gadget of the demo.
        properties:
          spec:
            type: object
            description: What the gadget should be.
            required: [replicas]
            x-kubernetes-validations:
            - {rule: "self.mode != 'fast' || self.replicas <= 3", message: fast gadgets run at most 3 replicas}
            properties:
              replicas: {type: integer, minimum: 0, description: How many gadgets.}
              mode: {type: string, enum: [safe, fast], default: safe, description: How the gadget runs.}
"#;

fn gadget(name: &str, replicas: u32) -> String {
    format!("apiVersion: demo.example.org/v1\nkind: Gadget\nmetadata:\n  name: {name}\nspec:\n  replicas: {replicas}\n")
}

async fn kubectl(bin: &str, kc: &Path, cache: &Path, args: &[&str]) -> (bool, String) {
    let (ok, out, err) = kubectl_bin(bin, kc, cache, args).await;
    (ok, format!("{out}{err}"))
}

#[tokio::test]
async fn kubectl_applies_gets_watches_and_explains_a_custom_kind() {
    let versions = kubectl_versions();
    for bin in [versions.first().unwrap(), versions.last().unwrap()] {
        let s = server().await;
        let dir = tempdir("kubectl-crd");
        let kc = dir.join("config");
        s.write_kubeconfig(&kc).unwrap();
        let cache = dir.join("cache");
        let crd = dir.join("crd.yaml");
        std::fs::write(&crd, CRD).unwrap();
        let crd = crd.to_str().unwrap();
        let (ok, out) = kubectl(bin, &kc, &cache, &["apply", "-f", crd]).await;
        assert!(ok && out.contains("created"), "{bin}: {out}");
        let (ok, out) = kubectl(bin, &kc, &cache, &["apply", "-f", crd]).await;
        assert!(ok && out.contains("unchanged"), "{bin}: {out}");
        let wait = ["wait", "--for", "condition=Established", "--timeout=10s", "crd/gadgets.demo.example.org"];
        let (ok, out) = kubectl(bin, &kc, &cache, &wait).await;
        assert!(ok && out.contains("condition met"), "{bin}: {out}");

        let g = dir.join("gizmo.yaml");
        std::fs::write(&g, gadget("gizmo", 2)).unwrap();
        let (ok, out) = kubectl(bin, &kc, &cache, &["apply", "-f", g.to_str().unwrap()]).await;
        assert!(ok && out.contains("gadget.demo.example.org/gizmo created"), "{bin}: {out}");
        let (ok, out) = kubectl(bin, &kc, &cache, &["get", "gadgets"]).await;
        assert!(ok, "{bin}: {out}");
        let lines: Vec<Vec<&str>> = out.lines().map(|l| l.split_whitespace().collect()).collect();
        assert_eq!(lines, [vec!["NAME", "REPLICAS", "MODE"], vec!["gizmo", "2", "safe"]], "{bin}: {out}");

        // `get -w`: the table, then the row of each change.
        let mut watch = tokio::process::Command::new(bin)
            .arg("--kubeconfig")
            .arg(&kc)
            .arg("--cache-dir")
            .arg(&cache)
            .args(["get", "gd", "-w"])
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .kill_on_drop(true)
            .spawn()
            .unwrap();
        let mut lines = BufReader::new(watch.stdout.take().unwrap()).lines();
        let mut next = async || {
            tokio::time::timeout(Duration::from_secs(20), lines.next_line()).await.expect("a line").unwrap().unwrap()
        };
        assert!(next().await.starts_with("NAME"), "{bin}");
        assert_eq!(next().await.split_whitespace().collect::<Vec<_>>(), ["gizmo", "2", "safe"], "{bin}");
        std::fs::write(&g, gadget("gizmo", 5)).unwrap();
        let (ok, out) = kubectl(bin, &kc, &cache, &["apply", "-f", g.to_str().unwrap()]).await;
        assert!(ok && out.contains("configured"), "{bin}: {out}");
        assert_eq!(next().await.split_whitespace().collect::<Vec<_>>(), ["gizmo", "5", "safe"], "{bin}");
        drop(watch);

        // The definition's validation rule, in kubectl's report of the 422.
        let racer = dir.join("racer.yaml");
        std::fs::write(&racer, gadget("racer", 4) + "  mode: fast\n").unwrap();
        let (ok, out) = kubectl(bin, &kc, &cache, &["apply", "-f", racer.to_str().unwrap()]).await;
        assert!(!ok, "{bin}: {out}");
        assert!(
            out.contains(r#"The Gadget "racer" is invalid: spec: Invalid value: fast gadgets run at most 3 replicas"#),
            "{bin}: {out}"
        );

        // A definition whose rule names a field its schema lacks is refused, in cel-go's words.
        let broken = dir.join("broken.yaml");
        let text = CRD
            .replace("gadgets.demo.example.org", "widgets.demo.example.org")
            .replace(
                "{plural: gadgets, singular: gadget, kind: Gadget, shortNames: [gd]}",
                "{plural: widgets, kind: Widget}",
            )
            .replace("self.mode != 'fast'", "self.mod != 'fast'");
        std::fs::write(&broken, text).unwrap();
        let (ok, out) = kubectl(bin, &kc, &cache, &["apply", "-f", broken.to_str().unwrap()]).await;
        assert!(!ok, "{bin}: {out}");
        assert!(
            out.contains(r#"The CustomResourceDefinition "widgets.demo.example.org" is invalid: spec.validation.openAPIV3Schema.properties[spec].x-kubernetes-validations[0].rule: Invalid value: "#)
                && out.contains("compilation failed: ERROR: <input>:1:5: undefined field 'mod'"),
            "{bin}: {out}"
        );

        // A rule kube would find too costly (a pattern matched against every one of an unbounded
        // list of unbounded strings) is refused with kube's three causes.
        let costly = dir.join("costly.yaml");
        let text = CRD
            .replace("gadgets.demo.example.org", "gizmos.demo.example.org")
            .replace("{plural: gadgets, singular: gadget, kind: Gadget, shortNames: [gd]}", "{plural: gizmos, kind: Gizmo}")
            .replace(
                "mode: {type: string, enum: [safe, fast], default: safe, description: How the gadget runs.}",
                "mode: {type: string, enum: [safe, fast], default: safe, description: How the gadget runs.}\n              \
                 tags: {type: array, items: {type: string}, x-kubernetes-validations: [{rule: \"self.all(t, t.matches('^[a-z]+$'))\"}]}",
            );
        std::fs::write(&costly, text).unwrap();
        let (ok, out) = kubectl(bin, &kc, &cache, &["apply", "-f", costly.to_str().unwrap()]).await;
        assert!(!ok, "{bin}: {out}");
        let at = "spec.validation.openAPIV3Schema.properties[spec].properties[tags].x-kubernetes-validations[0].rule";
        assert!(
            out.contains(&format!("{at}: Forbidden: estimated rule cost exceeds budget by factor of more than 100x"))
                && out.contains(&format!(
                    "{at}: Forbidden: contributed to estimated rule cost total exceeding cost limit"
                ))
                && out.contains(
                    "spec.validation.openAPIV3Schema: Forbidden: x-kubernetes-validations estimated rule cost total"
                ),
            "{bin}: {out}"
        );

        let (ok, out) = kubectl(bin, &kc, &cache, &["explain", "gadget.spec"]).await;
        assert!(ok, "{bin}: {out}");
        assert!(
            out.contains("Gadget") && out.contains("replicas") && out.contains("How many gadgets."),
            "{bin}: {out}"
        );
        assert!(out.contains("mode") && out.contains("How the gadget runs."), "{bin}: {out}");

        // Discovery (aggregated for the kubectl versions that ask for it) lists the kind.
        let (ok, out) = kubectl(bin, &kc, &cache, &["api-resources", "--api-group=demo.example.org"]).await;
        assert!(ok, "{bin}: {out}");
        let row = out.lines().find(|l| l.starts_with("gadgets")).unwrap_or_else(|| panic!("{bin}: {out}"));
        assert_eq!(
            row.split_whitespace().collect::<Vec<_>>(),
            ["gadgets", "gd", "demo.example.org/v1", "true", "Gadget"]
        );
    }
}
