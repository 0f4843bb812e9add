"""Collective (NCCL2-mode) training on CPU: a ring all-reduce among trainer processes over TCP.

ring.py holds the transport (rendezvous, authenticated hello, chunked ring
all-reduce); service.py holds this process's ring, found from the program's
`gen_nccl_id` op or the collective environment (PADDLE_TRAINER_ENDPOINTS,
PADDLE_TRAINER_ID, PADDLE_CURRENT_ENDPOINT). docs/user/collective.md.
"""
