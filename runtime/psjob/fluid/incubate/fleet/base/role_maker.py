"""`paddle.fluid.incubate.fleet.base.role_maker`: psjob.fleet's role makers."""
from psjob.fleet.role_maker import PaddleCloudRoleMaker, Role, RoleMakerBase, UserDefinedRoleMaker

__all__ = ["Role", "RoleMakerBase", "UserDefinedRoleMaker", "PaddleCloudRoleMaker"]
