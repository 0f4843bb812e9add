"""`paddle.fluid.incubate`: Fluid 1.x's import paths of its Fleet and data generator.

Fluid 1.x parameter-server scripts import

    from paddle.fluid.incubate.fleet.parameter_server.distribute_transpiler import fleet
    from paddle.fluid.incubate.fleet.parameter_server.distribute_transpiler.distributed_strategy \\
        import StrategyFactory
    from paddle.fluid.incubate.fleet.base import role_maker
    import paddle.fluid.incubate.data_generator as dg

and these modules give them psjob's Fleet (psjob.fleet), its role makers and the MultiSlot
data generator (psjob.distributed.fleet). They sit in the distributed layer although
they are spelled under psjob.fluid (tests/unit/test_layering.py): psjob.fluid itself never
imports them, a script's import does.
"""
