"""Typed views of the controller's requests (``python -m pykraft.protocol.view_gen``, from the message classes). Do not edit."""

from __future__ import annotations

from pykraft.protocol.views.create_topics import CreateTopicsRequest
from pykraft.protocol.views.create_topics_response import CreateTopicsResponse
from pykraft.protocol.views.delete_topics import DeleteTopicsRequest
from pykraft.protocol.views.delete_topics_response import DeleteTopicsResponse
from pykraft.protocol.views.describe_acls import DescribeAclsRequest
from pykraft.protocol.views.describe_acls_response import DescribeAclsResponse
from pykraft.protocol.views.create_acls import CreateAclsRequest
from pykraft.protocol.views.create_acls_response import CreateAclsResponse
from pykraft.protocol.views.delete_acls import DeleteAclsRequest
from pykraft.protocol.views.delete_acls_response import DeleteAclsResponse
from pykraft.protocol.views.describe_configs import DescribeConfigsRequest
from pykraft.protocol.views.describe_configs_response import DescribeConfigsResponse
from pykraft.protocol.views.alter_configs import AlterConfigsRequest
from pykraft.protocol.views.alter_configs_response import AlterConfigsResponse
from pykraft.protocol.views.create_partitions import CreatePartitionsRequest
from pykraft.protocol.views.create_partitions_response import CreatePartitionsResponse
from pykraft.protocol.views.create_delegation_token import CreateDelegationTokenRequest
from pykraft.protocol.views.create_delegation_token_response import CreateDelegationTokenResponse
from pykraft.protocol.views.renew_delegation_token import RenewDelegationTokenRequest
from pykraft.protocol.views.renew_delegation_token_response import RenewDelegationTokenResponse
from pykraft.protocol.views.expire_delegation_token import ExpireDelegationTokenRequest
from pykraft.protocol.views.expire_delegation_token_response import ExpireDelegationTokenResponse
from pykraft.protocol.views.elect_leaders import ElectLeadersRequest
from pykraft.protocol.views.elect_leaders_response import ElectLeadersResponse
from pykraft.protocol.views.incremental_alter_configs import IncrementalAlterConfigsRequest
from pykraft.protocol.views.incremental_alter_configs_response import IncrementalAlterConfigsResponse
from pykraft.protocol.views.alter_partition_reassignments import AlterPartitionReassignmentsRequest
from pykraft.protocol.views.alter_partition_reassignments_response import AlterPartitionReassignmentsResponse
from pykraft.protocol.views.list_partition_reassignments import ListPartitionReassignmentsRequest
from pykraft.protocol.views.list_partition_reassignments_response import ListPartitionReassignmentsResponse
from pykraft.protocol.views.alter_client_quotas import AlterClientQuotasRequest
from pykraft.protocol.views.alter_client_quotas_response import AlterClientQuotasResponse
from pykraft.protocol.views.alter_user_scram_credentials import AlterUserScramCredentialsRequest
from pykraft.protocol.views.alter_user_scram_credentials_response import AlterUserScramCredentialsResponse
from pykraft.protocol.views.alter_partition import AlterPartitionRequest
from pykraft.protocol.views.alter_partition_response import AlterPartitionResponse
from pykraft.protocol.views.update_features import UpdateFeaturesRequest
from pykraft.protocol.views.update_features_response import UpdateFeaturesResponse
from pykraft.protocol.views.broker_registration import BrokerRegistrationRequest
from pykraft.protocol.views.broker_registration_response import BrokerRegistrationResponse
from pykraft.protocol.views.broker_heartbeat import BrokerHeartbeatRequest
from pykraft.protocol.views.broker_heartbeat_response import BrokerHeartbeatResponse
from pykraft.protocol.views.unregister_broker import UnregisterBrokerRequest
from pykraft.protocol.views.unregister_broker_response import UnregisterBrokerResponse
from pykraft.protocol.views.allocate_producer_ids import AllocateProducerIdsRequest
from pykraft.protocol.views.allocate_producer_ids_response import AllocateProducerIdsResponse
from pykraft.protocol.views.controller_registration import ControllerRegistrationRequest
from pykraft.protocol.views.assign_replicas_to_dirs import AssignReplicasToDirsRequest
from pykraft.protocol.views.assign_replicas_to_dirs_response import AssignReplicasToDirsResponse
from pykraft.protocol.views.unregister_controller import UnregisterControllerRequest
from pykraft.protocol.views.unregister_controller_response import UnregisterControllerResponse

__all__ = ['AllocateProducerIdsRequest', 'AllocateProducerIdsResponse', 'AlterClientQuotasRequest', 'AlterClientQuotasResponse', 'AlterConfigsRequest', 'AlterConfigsResponse', 'AlterPartitionReassignmentsRequest', 'AlterPartitionReassignmentsResponse', 'AlterPartitionRequest', 'AlterPartitionResponse', 'AlterUserScramCredentialsRequest', 'AlterUserScramCredentialsResponse', 'AssignReplicasToDirsRequest', 'AssignReplicasToDirsResponse', 'BrokerHeartbeatRequest', 'BrokerHeartbeatResponse', 'BrokerRegistrationRequest', 'BrokerRegistrationResponse', 'ControllerRegistrationRequest', 'CreateAclsRequest', 'CreateAclsResponse', 'CreateDelegationTokenRequest', 'CreateDelegationTokenResponse', 'CreatePartitionsRequest', 'CreatePartitionsResponse', 'CreateTopicsRequest', 'CreateTopicsResponse', 'DeleteAclsRequest', 'DeleteAclsResponse', 'DeleteTopicsRequest', 'DeleteTopicsResponse', 'DescribeAclsRequest', 'DescribeAclsResponse', 'DescribeConfigsRequest', 'DescribeConfigsResponse', 'ElectLeadersRequest', 'ElectLeadersResponse', 'ExpireDelegationTokenRequest', 'ExpireDelegationTokenResponse', 'IncrementalAlterConfigsRequest', 'IncrementalAlterConfigsResponse', 'ListPartitionReassignmentsRequest', 'ListPartitionReassignmentsResponse', 'RenewDelegationTokenRequest', 'RenewDelegationTokenResponse', 'UnregisterBrokerRequest', 'UnregisterBrokerResponse', 'UnregisterControllerRequest', 'UnregisterControllerResponse', 'UpdateFeaturesRequest', 'UpdateFeaturesResponse']
