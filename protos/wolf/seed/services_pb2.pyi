from wolf.seed import wolf_seed_pb2 as _wolf_seed_pb2
from google.protobuf import descriptor as _descriptor
from typing import ClassVar as _ClassVar

DESCRIPTOR: _descriptor.FileDescriptor
