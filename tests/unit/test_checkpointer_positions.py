"""Which data position a restarted trainer resumes at, per mode (Checkpointer.resume).

Real checkpoints of a small program written by trainer 0's Checkpointer; the other
trainers' positions are the files their own Checkpointers write every step."""
import psjob.fluid as fluid
from psjob.fleet import CheckpointConfig, Checkpointer


def _checkpointer(root, trainer_id, mode):
    main, startup = fluid.Program(), fluid.Program()
    with fluid.program_guard(main, startup), fluid.unique_name.guard():
        x = fluid.layers.data(name="x", shape=[4])
        fluid.layers.fc(x, 2, param_attr=fluid.ParamAttr(name="w"), bias_attr=False)
    exe, scope = fluid.Executor(), fluid.Scope()
    exe.run(startup, scope=scope)
    config = CheckpointConfig(root=str(root), interval_steps=5, trainer_id=trainer_id, mode=mode)
    return Checkpointer(exe, main, config, scope=scope)


def test_an_async_trainer_resumes_at_its_own_position(tmp_path):
    _checkpointer(tmp_path, 1, "async").after_step(3, epoch=1, batch=3)
    assert _checkpointer(tmp_path, 0, "async").after_step(5, epoch=1, batch=5)
    assert _checkpointer(tmp_path, 1, "async").resume()["step"] == 3
    assert _checkpointer(tmp_path, 0, "async").resume()["step"] == 5


def test_an_async_trainer_without_a_recorded_position_starts_its_share_again(tmp_path):
    # Trainer 1 had not recorded a position when trainer 0 saved step 5: resuming at trainer
    # 0's step would skip 5 batches of trainer 1's own share.
    assert _checkpointer(tmp_path, 0, "async").after_step(5, epoch=1, batch=5)
    assert _checkpointer(tmp_path, 1, "async").resume()["step"] == 0


def test_a_sync_trainer_resumes_at_the_round_of_the_checkpoint(tmp_path):
    assert _checkpointer(tmp_path, 0, "sync").after_step(5, epoch=1, batch=5)
    assert _checkpointer(tmp_path, 1, "sync").resume()["step"] == 5
