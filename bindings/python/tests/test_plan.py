"""Meshes, plans (planner, JSON, getters) and the placement simulator."""
from __future__ import annotations

import json
import os
import tempfile
import unittest

from tests.support import MODEL, PROMPT, ModelTestCase, pagoda


class MeshTest(unittest.TestCase):

    def test_links_need_two_devices(self) -> None:
        defaults = pagoda.LinkProfileOptions().to_c()
        self.assertEqual((defaults.min_bytes, defaults.max_bytes, defaults.repeats), (4096, 8 << 20, 10))
        with pagoda.Mesh() as mesh:
            with self.assertRaisesRegex(pagoda.UnsupportedError, "no link to time"):
                pagoda.profile_links(mesh)
            with self.assertRaisesRegex(pagoda.InvalidArgumentError, "min_bytes"):
                pagoda.profile_links(mesh, min_bytes=6)

    def test_default_mesh(self) -> None:
        with pagoda.Mesh() as mesh:
            self.assertEqual(mesh.device_names(), ["cpu:0"])
            self.assertEqual(len(mesh), 1)
            with self.assertRaises(pagoda.InvalidArgumentError):
                mesh.device_name(1)

    def test_named_devices(self) -> None:
        with pagoda.Mesh(devices="cpu:0", axes="tp=1") as mesh:
            self.assertEqual(mesh.device_name(0), "cpu:0")

    def test_one_process_world(self) -> None:
        with pagoda.Mesh(rank=0, world_size=1, timeout_ms=5000) as mesh:
            self.assertEqual(mesh.world(), (0, 1))
            self.assertEqual(mesh.device_names(), ["cpu:0"])
        with pagoda.Mesh() as mesh:  # PAGODA_RANK/PAGODA_WORLD_SIZE unset under the tests
            self.assertEqual(mesh.world(), (0, 1))
        with self.assertRaises(pagoda.ClosedError):
            mesh.world()

    def test_rank_outside_the_world(self) -> None:
        with self.assertRaises(pagoda.InvalidArgumentError) as caught:
            pagoda.Mesh(rank=2, world_size=2)
        self.assertIn("out of range", caught.exception.message)
        with self.assertRaises(pagoda.InvalidArgumentError):
            pagoda.Mesh(rank=0, world_size=1, timeout_ms=-1)

    def test_bootstrap_callback(self) -> None:
        # Rank 0 of two, in this one process: the "broadcast" plays a rank 1 that brings what
        # rank 0 brings (no second process is started).
        calls: list[tuple[int, int]] = []
        sent: dict[int, bytes] = {}

        def broadcast(data: memoryview, root: int) -> None:
            calls.append((len(data), root))
            if root == 0:
                sent[0] = bytes(data)
            else:
                data[:] = sent[0]

        with pagoda.Mesh(rank=0, world_size=2, bootstrap=broadcast) as mesh:
            self.assertEqual(mesh.world(), (0, 2))
            self.assertEqual(mesh.device_names(), ["cpu:0@rank0", "cpu:0@rank1"])
        # Two all_gathers, one broadcast per rank each: the ranks' machines, then their devices.
        self.assertEqual([root for _, root in calls], [0, 1, 0, 1])

        class Boom(Exception):
            pass

        def failing(data: memoryview, root: int) -> None:
            raise Boom("no broadcast")

        with self.assertRaises(Boom):  # the callable's own exception, once C has returned
            pagoda.Mesh(rank=0, world_size=2, bootstrap=failing)


class PlanTest(ModelTestCase):

    def test_plan_on_a_mesh(self) -> None:
        with pagoda.Mesh() as mesh, pagoda.Plan.create(self.model, mesh) as plan:
            summary = plan.summary()
            self.assertEqual(summary.n_stages, 1)
            (stage,) = plan.stages()
            self.assertEqual((stage.first_layer, stage.end_layer), (0, 5))
            self.assertTrue(stage.has_embedding and stage.has_head)
            self.assertEqual(stage.expert_parallel, 1)  # a dense model splits no experts
            self.assertEqual(plan.slice_lengths(), [])
            # A cache and an engine made with the plan generate as without one.
            with pagoda.KvCache(self.model, mesh, plan) as cache, \
                    pagoda.Engine(self.model, mesh, cache, plan=plan) as engine:
                self.assertEqual(len(engine.generate(PROMPT, max_tokens=4)[0].token_ids), 4)

    def test_plan_on_a_shape_with_slicing(self) -> None:
        with pagoda.Plan.create(self.model, None, mesh_shape="1x2", stages=2,
                                prompt_tokens=64, granularity=8,
                                objective=pagoda.PlanObjective.THROUGHPUT,
                                micro_batches=2) as plan:
            summary = plan.summary()
            self.assertEqual(summary.n_stages, 2)
            stages = plan.stages()
            self.assertEqual(stages[0].first_layer, 0)
            self.assertEqual(stages[0].end_layer, stages[1].first_layer)
            self.assertEqual(stages[1].end_layer, 5)
            lengths = plan.slice_lengths()
            self.assertEqual(len(lengths), summary.n_slices)
            self.assertEqual(sum(lengths), 64)
            self.assertTrue(all(n % 8 == 0 for n in lengths))
            doc = json.loads(plan.to_json())
            self.assertEqual(doc["format"], "pagoda-plan")
            self.assertEqual(doc["objective"], "throughput")
            self.assertEqual(doc["micro_batches"], 2)
            with pagoda.Plan.from_json(plan.to_json()) as again:
                self.assertEqual(again.stages(), stages)
                self.assertEqual(again.summary(), summary)

    def test_options_object_or_keywords(self) -> None:
        opts = pagoda.PlanOptions(mesh_shape="1x2", stages=2)
        with pagoda.Plan.create(self.model, None, opts) as a, \
                pagoda.Plan.create(self.model, None, mesh_shape="1x2", stages=2) as b:
            self.assertEqual(a.stages(), b.stages())
            # A dense model has no experts to split: 1 group is the planner's choice already.
            with pagoda.Plan.create(self.model, None, mesh_shape="1x2", stages=2,
                                    expert_parallel=1) as c:
                self.assertEqual(c.stages(), a.stages())
        with self.assertRaises(TypeError):
            pagoda.Plan.create(self.model, None, opts, stages=2)  # both: which one would win?
        with self.assertRaises(TypeError):
            pagoda.Plan.create(self.model, None, mesh_shape="1x2", stagez=2)  # misspelt

    def test_bad_plan_json(self) -> None:
        with self.assertRaises(pagoda.FormatError) as cm:
            pagoda.Plan.from_json('{"format": "pagoda-plan", "version": 1}')
        self.assertTrue(cm.exception.message)

    def test_bad_plan_option(self) -> None:
        with self.assertRaises(pagoda.InvalidArgumentError) as cm:
            pagoda.Plan.create(self.model, None, mesh_shape="1x2", micro_batches=0)
        self.assertIn("micro_batches", cm.exception.message)


class PlacementTest(unittest.TestCase):

    PLACEMENT = {"models": [{"name": "a", "slo": 1.0}],
                 "groups": [{"devices": [0], "pipeline": 1, "tensor": 1,
                             "replicas": [{"model": "a", "stage_seconds": [0.1]}]}]}

    def test_simulate(self) -> None:
        result = pagoda.simulate_placement(self.PLACEMENT, rate_per_model=2.0,
                                           duration_seconds=100.0, seed=3)
        self.assertGreater(result["requests"], 100)
        self.assertTrue(0.0 < result["slo_attainment"] <= 1.0)
        self.assertEqual(result, pagoda.simulate_placement(json.dumps(self.PLACEMENT),
                                                           rate_per_model=2.0,
                                                           duration_seconds=100.0, seed=3))

    def test_simulate_options_object(self) -> None:
        opts = pagoda.SimulateOptions(rate_per_model=2.0, duration_seconds=100.0, seed=3)
        self.assertEqual(pagoda.simulate_placement(self.PLACEMENT, opts),
                         pagoda.simulate_placement(self.PLACEMENT, rate_per_model=2.0,
                                                   duration_seconds=100.0, seed=3))
        with self.assertRaises(TypeError):
            pagoda.simulate_placement(self.PLACEMENT, rate_per_modle=2.0)  # misspelt

    def test_simulate_errors(self) -> None:
        with self.assertRaises(pagoda.FormatError):
            pagoda.simulate_placement("{not json")
        with self.assertRaises(pagoda.InvalidArgumentError) as cm:
            pagoda.simulate_placement(self.PLACEMENT, duration_seconds=-1.0)
        self.assertTrue(cm.exception.message)

    def test_search(self) -> None:
        spec = {"cluster": {"devices_per_node": 2, "device": "cpu"},
                "models": [{"name": "a", "slo": 5.0,
                            "shape": {"hidden": 64, "intermediate": 172, "layers": 5,
                                      "heads": 8, "kv_heads": 4, "vocab": 512}}],
                "request": {"tokens": 16}}
        placement = pagoda.search_placement(spec, duration_seconds=20.0)
        self.assertIn("groups", placement)
        self.assertIn("slo_attainment", placement["search"])


    def test_profile_then_search_with_costs(self) -> None:
        with tempfile.TemporaryDirectory() as folder:
            costs = os.path.join(folder, "costs.json")
            entry = pagoda.profile_costs(MODEL, costs, max_tokens=16, granularity=8, grid=2,
                                         repeats=1)
            self.assertTrue(entry["device"].startswith("cpu:0 "))
            self.assertEqual(len(entry["no_context_seconds"]), 2)
            spec = {"cluster": {"devices_per_node": 2, "costs": costs},
                    "models": [{"name": "a", "slo": 5.0, "shape": entry["shape"]}],
                    "request": {"prompt_tokens": 4, "output_tokens": 4}}
            placement = pagoda.search_placement(spec, duration_seconds=20.0)
            self.assertEqual(placement["search"]["costs"], "measured:" + costs)
            with self.assertRaises(pagoda.InvalidArgumentError):
                pagoda.profile_costs(MODEL, costs, options=pagoda.CostProfileOptions(max_tokens=20))
            with self.assertRaises(pagoda.InvalidArgumentError):
                pagoda.profile_costs(MODEL, costs, beside="cpu:0")


if __name__ == "__main__":
    unittest.main()
