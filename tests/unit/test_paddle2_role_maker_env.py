"""paddle.distributed.fleet's PaddleCloudRoleMaker reading its environment as Paddle 3.0.0's
does (Paddle's own test_fleet_rolemaker_init.py): making it never fails; the environment is
read when the role is generated (`_generate_role`, which fleet.init and every role query call
first), and an incomplete one raises a ValueError there. A parameter-server trainer needs
PADDLE_TRAINER_ID ("Can not find PADDLE_TRAINER_ID, please check your environment." from
Paddle 3.0.0; psjob.fleet's Fluid 1.x role maker takes 0). psjob also takes its own
PSJOB_TRAINER_ID (`auto`: an id from pserver 0)."""
import pytest

from psjob.distributed.fleet.base.role_maker import PaddleCloudRoleMaker

PSERVERS = {"PADDLE_PSERVERS_IP_PORT_LIST": "127.0.0.1:4001,127.0.0.1:4002"}


@pytest.mark.parametrize("env, missing", [
    ({}, "TRAINING_ROLE"),  # psjob names the first field it misses; Paddle, PADDLE_TRAINERS_NUM
    ({"PADDLE_TRAINERS_NUM": "2"}, "TRAINING_ROLE"),
    ({"PADDLE_TRAINERS_NUM": "2", "TRAINING_ROLE": "TRAINER"}, "Can not find PADDLE_TRAINER_ID"),
    ({"PADDLE_TRAINERS_NUM": "2", "TRAINING_ROLE": "PSERVER"}, "PADDLE_PORT"),
    ({"PADDLE_TRAINERS_NUM": "2", "TRAINING_ROLE": "PSERVER", "PADDLE_PORT": "4001"}, "POD_IP"),
])
def test_an_incomplete_environment_fails_when_the_role_is_generated(env, missing):
    rm = PaddleCloudRoleMaker(is_collective=False, environ={**PSERVERS, **env})
    with pytest.raises(ValueError, match=missing):
        rm._generate_role()
    with pytest.raises(ValueError, match=missing):
        rm._is_worker()  # a query generates the role first, as Paddle's


def test_the_environment_is_read_again_when_the_role_is_generated():
    env = {**PSERVERS, "PADDLE_TRAINERS_NUM": "2", "TRAINING_ROLE": "TRAINER"}
    rm = PaddleCloudRoleMaker(is_collective=False, environ=env)
    env["PADDLE_TRAINER_ID"] = "1"
    rm._generate_role()
    assert rm._is_worker() and rm._worker_index() == 1 and rm._server_num() == 2
